# expect: CT1002 CT1002
# a move inside a while loop is seen after it
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    i = 0
    while i < n:
        w = z
        i += 1
    z.store(zeros((128,), f32))
