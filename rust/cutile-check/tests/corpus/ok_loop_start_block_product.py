# expect: ok
# a loop start `block_id(0) * a` (a split-K style chunk) may wrap in i32 for large grids or
# `a`: the launch predicate bounds it over the largest block id
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], a: i32):
    acc = zeros((16,), f32)
    for i in range(block_id(0) * a, block_id(0) * a + a):
        acc += x.load_tile((16,), (i,))
    z.store(acc)
