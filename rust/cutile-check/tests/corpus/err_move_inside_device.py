# expect: CT1002
# move semantics hold inside device functions too
import cutile
from cutile.core import *

@cutile.device
def write(o: Mut[Tensor[f32, [128]]]):
    p = o
    o.store(zeros((128,), f32))

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    write(z)
