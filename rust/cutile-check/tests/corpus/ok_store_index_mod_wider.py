# expect: ok
# `b % (num_blocks(0) + 4)` is `b` (0 <= b < num_blocks(0) + 4), and `b * -1 // -1` is `b`
# (found by the soundness fuzzer, rejected before)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [4, 8]]]):
    i = block_id(0) % (num_blocks(0) + 4)
    j = block_id(1) * -1 // -1
    z.store(full((4, 8), 1, i32), index=(i, j))
