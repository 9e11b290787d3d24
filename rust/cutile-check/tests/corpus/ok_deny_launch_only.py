# expect: ok
# deny_in_kernel_checks accepts launch predicates
import cutile
from cutile.core import *

@cutile.entry(deny_in_kernel_checks=True)
def k(z: Mut[Tensor[f32, [64, 64]]], x: Tensor[f32, [-1, -1]]):
    t = x.load_tile((64, 64), (block_id(1), block_id(0)))
    z.store(t)
