# expect: ok
# a loop of one iteration binds one value, even with a `break` in it
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    for i in range(0, 1):
        if n > 3:
            break
        z.store(zeros((128,), f32), index=(block_id(0) + i,))
