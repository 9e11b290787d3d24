# a reduction along an axis the tile does not have
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    t = z.load()
    z.store(full((16,), t.sum(axis=1), f32))  #~ ERROR
