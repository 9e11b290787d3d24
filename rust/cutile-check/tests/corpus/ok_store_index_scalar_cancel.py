# expect: ok
# `b * s // s` is `b` on the launches where s >= 1 and b * s fits 32 bits: both checked at
# launch (s is a runtime scalar of either sign); a loop of one iteration binds one value
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]], s: i32):
    for i in range(1):
        z.store(full((16,), 1, i32), index=(block_id(0) * s // s + i,))
