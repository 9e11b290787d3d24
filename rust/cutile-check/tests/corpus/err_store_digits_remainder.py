# expect: CT2001
# rule 5: bx % H drops the quotient bx // H: with more than H blocks on axis 0 two of them
# share a tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]], H: Const[int]):
    bx = block_id(0)
    by = block_id(1)
    z.store(zeros((64, 64), f32), index=(bx % H, by))
