# expect: ok
# a loop start that multiplies a value read from memory by a scalar: no launch can decide
# whether it wraps, so the start stays the device's value and the load keeps its device check
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], s: Tensor[i32, [1]], a: i32, n: i32):
    first = s.load_tile((1,), (0,)).item()
    acc = zeros((16,), f32)
    for i in range(first * a, n):
        acc += x.load_tile((16,), (i,))
    z.store(acc)
