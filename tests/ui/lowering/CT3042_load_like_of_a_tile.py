# `load_tile_like` of a tile instead of a tensor
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(load_tile_like(z.load(), z))  #~ ERROR
