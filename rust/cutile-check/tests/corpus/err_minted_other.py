# expect: CT2004
# an index minted by `w` cannot store to `z`
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], w: Mut[Tensor[f32, [128]]]):
    for idx in w.iter_indices():
        z.store(zeros((128,), f32), index=idx)
        w.store(zeros((128,), f32), index=idx)
