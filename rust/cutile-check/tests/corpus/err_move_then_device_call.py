# expect: CT1002
# a moved tensor cannot be passed to a device function
import cutile
from cutile.core import *

@cutile.device
def write(o: Mut[Tensor[f32, [128]]]):
    o.store(zeros((128,), f32))

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    w = z
    write(z)
