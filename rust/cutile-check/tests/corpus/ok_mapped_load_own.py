# expect: ok
# a minted index is the block's own tile for that iteration
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    for idx in z.iter_indices():
        t = z.load(index=idx)
        z.store(t + 1.0, index=idx)
