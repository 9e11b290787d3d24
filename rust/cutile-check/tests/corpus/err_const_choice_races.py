# expect: CT2010
# a tensor chosen by a test of Consts is followed exactly: where `C == 2` is false, `w`
# is `v`, which is also stored through a second map (a race)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], v: Mut[Tensor[f32, [128]]], C: Const[int]):
    b = block_id(0)
    v.store(zeros((128,), f32), index=(num_tiles(v, 0) - 1 - b,))
    if C == 2:
        w = z
    else:
        w = v
    w.store(zeros((128,), f32))
