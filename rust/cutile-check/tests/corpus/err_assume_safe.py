# expect: CT4005
# rule 6: assume hints need unsafe
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    m = assume_div_by(n, 16)
    z.store(zeros((128,), f32))
