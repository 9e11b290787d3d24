# `min` of two scalars under `from cutile.core import *` (the reduction, not the builtin)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    rounds = min(num_blocks(0), 4)  #~ ERROR
    for _ in range(rounds):
        z.store(zeros((16,), f32))
