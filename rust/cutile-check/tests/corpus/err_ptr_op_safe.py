# expect: CT4001
# rule 6: pointer forging needs unsafe
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], addr: i64):
    p = int_to_ptr(addr, f32)
    z.store(zeros((128,), f32))
