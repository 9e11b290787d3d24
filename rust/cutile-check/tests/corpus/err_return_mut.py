# expect: CT1010
# a device function cannot return its Mut parameter
import cutile
from cutile.core import *

@cutile.device
def ident(o: Mut[Tensor[f32, [128]]]):
    return o

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    w = ident(z)
    z.store(zeros((128,), f32))
