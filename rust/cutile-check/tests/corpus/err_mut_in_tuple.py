# expect: CT1010
# a Mut packed into a tuple escapes tracking
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    pair = (z, x)
    z.store(zeros((128,), f32))
