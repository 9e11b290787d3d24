# expect: CT2003
# a path that falls off the end of a device function returns None: the index is unknown
import cutile
from cutile.core import *

@cutile.device
def pick(b, n):
    while n > 3:
        return b

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    z.store(zeros((128,), f32), index=(pick(block_id(0), n),))
