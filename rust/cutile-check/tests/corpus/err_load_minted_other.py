# expect: CT1007
# an index minted for `z` is not `w`'s own tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], w: Mut[Tensor[f32, [128]]]):
    for idx in z.iter_indices():
        t = w.load(index=idx)
        z.store(t, index=idx)
