# expect: ok
# `arange(S)` (written `arange(0, S, 1)`) makes a tile of S elements, so a kernel that runs
# has S >= 1: the index below is the block id, statically (without the arange, `1 <= S`
# would be a launch predicate)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, ["B"]]], B: Const[int], S: Const[int]):
    t = arange(S)
    z.store(full((B,), 1, i32) + t[:1] * 0, index=(block_id(0) // S * S + block_id(0) % S,))
