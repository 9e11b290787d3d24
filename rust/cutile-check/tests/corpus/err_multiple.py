# expect: CT1002 CT4002 CT1001
# several violations are all reported, in source order
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]], c: Tensor[i32, [1]]):
    w = z
    z.store(zeros((128,), f32))
    atomic_add(c, 0, 1)
    x.store(w.load())
