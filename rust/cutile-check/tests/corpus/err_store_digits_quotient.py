# expect: CT2001
# rule 5: the quotient bx // 2 alone drops the low digit: blocks 0 and 1 share a tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    bx = block_id(0)
    z.store(zeros((64, 64), f32), index=(bx // 2, 0))
