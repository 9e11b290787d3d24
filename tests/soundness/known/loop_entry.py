"""Known class 6 (entry file): a sub-partition store inside `for i in range(5)` over 4
sub-tiles. The device function `relay` (loop_helper.py) has its own loop, whose variable
starts at the same byte offset of its file as `i` does here; a checker that keys loops by
byte offset alone takes `relay`'s range (0..0) for `i` and accepts the store."""

import cutile
from cutile.core import Mut, Tensor, block_id, full, i32

from .loop_helper import relay


@cutile.entry
def sub_loop(z: Mut[Tensor[i32, [4]]]):
    p = z.partition_mut((1,))
    for i in range(5):
        v = relay(full((1,), block_id(0) + 1, i32))
        p.store(v, (i,))
