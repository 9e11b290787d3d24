# expect: CT2010
# rule 5: an own-tile store next to a transposed store races (block (0, 1) vs block (1, 0))
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    z.store(zeros((64, 64), f32))
    z.store(full((64, 64), 1.0, f32), index=(block_id(1), block_id(0)))
