# expect: CT1010
# a conditional choice between Muts is not tracked
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], v: Mut[Tensor[f32, [128]]], flag: i32):
    w = z if flag > 0 else v
    w.store(zeros((128,), f32))
