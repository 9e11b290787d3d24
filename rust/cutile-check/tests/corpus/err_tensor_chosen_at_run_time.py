# expect: CT1010
# a tensor chosen by a test known only on the device: no single owner can be followed
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], v: Mut[Tensor[f32, [128]]], flag: i32):
    if flag > 0:
        w = z
    else:
        w = v
    w.store(zeros((128,), f32))
