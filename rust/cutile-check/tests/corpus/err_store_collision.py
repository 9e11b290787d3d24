# expect: CT2001
# rule 5: b0 + b1 sends (0, 1) and (1, 0) to one tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    z.store(zeros((64, 64), f32), index=(block_id(0) + block_id(1), 0))
