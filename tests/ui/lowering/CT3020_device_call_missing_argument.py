# a device function called without one of its arguments
import cutile
from cutile.core import *

@cutile.device
def scale(t, s):
    return t * s

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(scale(z.load()))  #~ ERROR
