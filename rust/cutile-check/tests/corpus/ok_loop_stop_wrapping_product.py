# expect: ok
# a loop stop `a * b` that may wrap in i32: the loop runs to the wrapped value, so the exact
# stop bounds the counter only under a launch predicate that the product fits
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], a: i32, b: i32):
    acc = zeros((16,), f32)
    for i in range(0, a * b):
        acc += x.load_tile((16,), (i,))
    z.store(acc)
