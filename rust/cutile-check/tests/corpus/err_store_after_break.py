# expect: CT2003
# the loop variable after a `break` is one of the loop's values: unknown to the prover
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    i = block_id(0)
    for i in range(num_blocks(0)):
        if i == n:
            break
    z.store(zeros((128,), f32), index=(i,))
