# expect: CT2003
# a device function that returns different indices on different paths returns an unknown
import cutile
from cutile.core import *

@cutile.device
def pick(b, n):
    if n > 3:
        return b
    return b + 1

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    z.store(zeros((128,), f32), index=(pick(block_id(0), n),))
