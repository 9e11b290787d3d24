# expect: CT4002
# rule 6: atomics need unsafe
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], counter: Tensor[i32, [1]]):
    atomic_add(counter, 0, 1)
    z.store(zeros((128,), f32))
