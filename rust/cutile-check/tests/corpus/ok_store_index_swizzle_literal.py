# expect: ok
# grouped swizzle with a literal group size: static
import cutile
from cutile.core import *

GROUP = 8

@cutile.entry
def k(z: Mut[Tensor[f32, [128, 128]]]):
    m = num_blocks(0)
    n = num_blocks(1)
    pid = block_id(1) * m + block_id(0)
    width = GROUP * n
    first = (pid // width) * GROUP
    size = minimum(m - first, GROUP)
    z.store(zeros((128, 128), f32), index=(first + (pid % width) % size, (pid % width) // size))
