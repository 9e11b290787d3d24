# expect: CT2003
# `continue` does not make a loop of two iterations one: both values of `i` are stored
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    for i in range(2):
        if i == 0:
            continue
        z.store(zeros((128,), f32), index=(block_id(0) + i,))
