# a tile shape from a tensor's `.shape` (its extent at run time, not the tile's)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [8]]]):
    z.store(zeros(z.shape, f32))  #~ ERROR
