# expect: ok
# a `while` counter index is bounds-checked on the device
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32):
    acc = zeros((16,), f32)
    i = 0
    while i < n:
        acc = acc + x.load_tile((16,), (i,))
        i += 1
    z.store(acc)
