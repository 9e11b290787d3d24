# `num_tiles` of an input without the tile shape
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
    n = num_tiles(x, 0)  #~ ERROR
    z.store(z.load())
