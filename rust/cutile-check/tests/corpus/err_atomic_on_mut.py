# expect: CT4002
# atomics on an output (or a shared input) need `unsafe`; an `Atomic` parameter needs none
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[i32, [-1]]):
    z.store(zeros((16,), f32))
    atomic_add(z, x.load_tile((16,), (block_id(0),)), 1.0)
