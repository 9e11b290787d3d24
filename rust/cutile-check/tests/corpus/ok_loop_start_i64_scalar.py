# expect: ok
# the loop counter is an i32: an i64 bound is truncated to it (s = 2**32 - 5 starts the loop
# at -5), so the bound is the counter's only under a launch predicate that it fits 32 bits
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], s: i64, n: i32):
    acc = zeros((16,), f32)
    for j in range(s, n):
        acc += x.load_tile((16,), (j,))
    z.store(acc)
