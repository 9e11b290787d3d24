# expect: CT1012
# device functions are inlined and cannot recurse
import cutile
from cutile.core import *

@cutile.device
def loop(o: Mut[Tensor[f32, [128]]], n):
    if n > 0:
        loop(o, n - 1)
    o.store(zeros((128,), f32))

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    loop(z, 3)
