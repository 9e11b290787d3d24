# expect: CT2010 CT2011
# a persistent kernel cannot also store the tile at its block id: another block mints it
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    for idx in z.iter_indices():
        z.store(zeros((128,), f32), index=idx)
    z.store(zeros((128,), f32))
