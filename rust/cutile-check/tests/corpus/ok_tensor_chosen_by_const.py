# expect: ok
# a tensor chosen by a test of Consts: each specialization runs one branch, for every
# block, and the checker follows the tensor of each (`v` is stored through the same map)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], v: Mut[Tensor[f32, [128]]], C: Const[int]):
    if C == 2:
        w = z
    else:
        w = v
    w.store(zeros((128,), f32))
    u = v if C == 2 else z
    u.store(zeros((128,), f32) + 1.0)
