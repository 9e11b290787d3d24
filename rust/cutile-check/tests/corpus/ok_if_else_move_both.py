# expect: ok
# moves in both branches, the moved-to name is used after
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], flag: i32):
    if flag > 0:
        w = z
    else:
        w = z
    w.store(zeros((128,), f32))
