# expect: CT3051
# `min` from `cutile.core` is a reduction along an axis, not the builtin min of two numbers
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    rounds = min(num_blocks(0), 4)
    for _ in range(rounds):
        z.store(zeros((128,), f32))
