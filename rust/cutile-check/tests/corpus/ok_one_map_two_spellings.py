# expect: ok
# one map spelled three ways is one map: the own tile read by `z.load()`, the digits of the
# linearized block id, and a clamp that never clamps (CT2010/CT2012 compare maps after the
# rewrites that hold on every launch)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, ["B0", "B1"]]], B0: Const[int], B1: Const[int]):
    b0, b1 = block_id(0), block_id(1)
    t = z.load()
    lin = b0 * num_blocks(1) + b1
    z.store(t + 1, index=(lin // num_blocks(1), lin % num_blocks(1)))
    z.store(t + 2, index=(maximum(minimum(b0, num_blocks(0) - 1), 0), b1))
