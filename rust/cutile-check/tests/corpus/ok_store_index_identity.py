# expect: ok
# computed index equal to the block id: proved statically
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    z.store(zeros((64, 64), f32), index=(block_id(0), block_id(1)))
