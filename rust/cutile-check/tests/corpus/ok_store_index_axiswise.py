# expect: ok
# a bijection on each block axis, axes in any order: a reversal, a rotation and an odd
# stride modulo the axis (gcd(3, grid(2)) == 1, checked at launch)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [4, 8, 2]]]):
    i = num_blocks(0) - 1 - block_id(0)
    j = (5 - block_id(1)) % num_tiles(z, 1)
    l = (3 * block_id(2) + 1) % num_blocks(2)
    z.store(full((4, 8, 2), 1, i32), index=(i, j, l))
