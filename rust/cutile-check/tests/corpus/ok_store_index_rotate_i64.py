# expect: ok
# a rotation of the blocks by a runtime i64 scalar: `(b + s) % num_blocks(0)` is a
# bijection for every s; the sum is computed in 64 bits, so the launch checks it fits
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]], s: i64):
    z.store(full((16,), 1, i32), index=((block_id(0) + s) % num_blocks(0),))
