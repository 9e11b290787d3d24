# expect: CT2008
# the same step under `deny_in_kernel_checks`: its device check is refused
import cutile
from cutile.core import *

@cutile.entry(deny_in_kernel_checks=True)
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
    acc = zeros((16,), f32)
    s = 1
    while s < 4:
        for j in range(0, 4, s):
            acc = acc + x.load_tile((16,), (block_id(0),))
        s += 1
    z.store(acc)
