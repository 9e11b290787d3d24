# expect: ok
# a loop start `a * b` of i32 scalars is computed in i32 and may wrap: it is the loop's exact
# start only under a launch predicate that it fits (`loop-bounds-fit`); the load of tile `i`
# is then in bounds by a launch predicate over the exact start (before, `0 <= a * b` alone
# passed for a = b = 46341, and the device's wrapped start read far below the tensor)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], a: i32, b: i32, n: i32):
    acc = zeros((16,), f32)
    for i in range(a * b, n):
        acc += x.load_tile((16,), (i,))
    z.store(acc)
