# a scalar parameter of a type the launcher cannot pass
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], s: tf32):  #~ ERROR
    z.store(z.load() * s)
