# expect: ok
# `z.load(index=(block_id(0),))` is provably the own tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    t = z.load(index=(block_id(0),))
    z.store(t * 2.0)
