# `if` on a tile instead of a scalar
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    t = z.load()
    if t > 0:  #~ ERROR
        z.store(t)
