# expect: ok
# 3-D permutation with a reversal on one axis
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [8, 8, 8]]]):
    a, b, c = block_id(0), block_id(1), block_id(2)
    z.store(zeros((8, 8, 8), f32), index=(a, num_tiles(z, 1) - 1 - c, b))
