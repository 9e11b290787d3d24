# expect: ok
# `(b * 2**30) // 2**30` is `b` only while `b * 2**30` fits 32 bits: the device wraps, so
# the launch must have at most two blocks (a launch predicate, not a proof over the integers)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    b = block_id(0)
    z.store(zeros((128,), f32), index=((b * 2**30) // 2**30,))
