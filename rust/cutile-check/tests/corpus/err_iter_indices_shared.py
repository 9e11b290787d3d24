# expect: CT2009
# only a Mut partition has a store schedule
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    for idx in x.iter_indices():
        z.store(zeros((128,), f32))
