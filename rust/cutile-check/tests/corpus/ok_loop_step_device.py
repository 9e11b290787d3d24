# expect: ok
# a step carried round a `while` is not known before the loop: a device check
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
    acc = zeros((16,), f32)
    s = 1
    while s < 4:
        for j in range(0, 4, s):
            acc = acc + x.load_tile((16,), (j,))
        s += 1
    z.store(acc)
