# expect: ok
# 2-D digits: transpose inside each R x R square of tiles, swapping the low digits
# (block_id % R) of the two axes; a bijection when R divides both grid extents (launch)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]], R: Const[int]):
    bx = block_id(0)
    by = block_id(1)
    i = bx // R * R + by % R
    j = by // R * R + bx % R
    z.store(zeros((64, 64), f32), index=(i, j))
