# expect: ok
# storing twice through the same computed map is ordered within the block
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    z.store(zeros((64, 64), f32), index=(block_id(1), block_id(0)))
    z.store(full((64, 64), 1.0, f32), index=(block_id(1), block_id(0)))
