# expect: CT2011
# in a persistent kernel `z.load()` reads the tile at the block id, which another block may own
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    for idx in z.iter_indices():
        t = z.load()
        z.store(t, index=idx)
