# expect: ok
# `return` from inside a loop of a device function; the code after it runs conditionally
import cutile
from cutile.core import *

@cutile.device
def first_over(x: Tensor[f32, [-1]], limit, n):
    for k in range(n):
        t = x.load_tile((128,), (k,))
        if t.max() > limit:
            return t
    return zeros((128,), f32)

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]], n: i32):
    z.store(first_over(x, 1.0, minimum(n, num_tiles(x, 0, (128,)))))
