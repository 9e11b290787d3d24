# expect: CT2003
# rule 5: a `while` counter is unknown at the loop head, so no store index may depend on it
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], n: i32):
    i = block_id(0)
    while i < n:
        z.store(zeros((128,), f32), index=(i,))
        i = i + num_blocks(0)
