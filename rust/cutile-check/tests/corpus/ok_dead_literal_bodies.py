# expect: ok
# bodies that run in no specialization (tests of literals) are not read: the stores
# there would race, and the compiler emits none of them
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    b = block_id(0)
    while False:
        z.store(zeros((128,), f32), index=(b // 2,))
    for _ in range(0):
        z.store(zeros((128,), f32), index=(b // 2,))
    if 0:
        z.store(zeros((128,), f32), index=(b // 2,))
    w = z if 1 else z.partition_mut((64,))
    w.store(zeros((128,), f32))
