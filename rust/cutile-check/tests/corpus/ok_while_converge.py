# expect: ok
# a `while` with a data-dependent trip count stores the block's own tile each iteration
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    a = load_tile_like(x, z)
    y = maximum(a, 1.0)
    err = 1.0
    while err > 0.000001:
        y2 = 0.5 * (y + a / y)
        err = abs(y2 - y).max()
        y = y2
        z.store(y)
