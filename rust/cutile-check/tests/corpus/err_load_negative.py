# expect: CT2007
# a negative tile index
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    z.store(x.load_tile((128,), (block_id(0) - num_blocks(0),)))
