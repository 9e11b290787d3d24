# expect: CT1002
# a move in one branch is seen after the `if`
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], flag: i32):
    if flag > 0:
        w = z
        w.store(zeros((128,), f32))
    z.store(full((128,), 1.0, f32))
