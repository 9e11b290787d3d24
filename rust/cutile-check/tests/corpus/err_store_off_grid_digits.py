# expect: CT2002
# rule 5: an off-by-one in a 2-D digit map (a bijection without the + 1 when grid(0) == 2 * grid(1))
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    bx = block_id(0)
    by = block_id(1)
    z.store(zeros((64, 64), f32), index=(bx % 2 + 2 * by + 1, bx // 2))
