# `load_tile_like` of a rank-2 input at a rank-1 output's tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1, -1]]):
    z.store(load_tile_like(x, z))  #~ ERROR
