# expect: ok
# reversal `n - 1 - b` is a bijection onto the grid
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    z.store(t, index=(num_blocks(0) - 1 - block_id(0),))
