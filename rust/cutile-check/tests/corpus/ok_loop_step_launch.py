# expect: ok
# a run-time `range` step is checked positive at launch, which `deny_in_kernel_checks` allows;
# then the counter stays in `[0, 4)`, so the load needs no device check either
import cutile
from cutile.core import *

@cutile.entry(deny_in_kernel_checks=True)
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], s: i32):
    acc = zeros((16,), f32)
    for j in range(0, 4, s):
        acc = acc + x.load_tile((16,), (j,))
    z.store(acc)
