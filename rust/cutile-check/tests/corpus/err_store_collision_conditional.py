# expect: CT2001
# a collision at a store that runs only on some paths: the note says the blocks must reach it
import cutile
from cutile.core import *

@cutile.device
def put(o, t, i, n):
    if n > 0:
        return
    o.store(t, index=(i,))

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    put(z, zeros((128,), f32), block_id(0) // 2, n)
