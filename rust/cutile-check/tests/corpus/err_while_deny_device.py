# expect: CT2008
# a `while` counter index can only be checked on the device, which the kernel denies
import cutile
from cutile.core import *

@cutile.entry(deny_in_kernel_checks=True)
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32):
    acc = zeros((16,), f32)
    i = 0
    while i < n:
        acc = acc + x.load_tile((16,), (i,))
        i += 1
    z.store(acc)
