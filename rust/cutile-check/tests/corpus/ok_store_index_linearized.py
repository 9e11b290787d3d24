# expect: ok
# the digits of a linearized block id are the block id again (docs/dsl.md)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16, 16]]]):
    n1 = num_blocks(1)
    lin = block_id(0) * n1 + block_id(1)
    z.store(zeros((16, 16), f32), index=(lin // n1, lin % n1))
