# expect: CT4003
# gather is safe from a shared input; from an output it reads what other blocks write
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], idx: Tensor[i32, [-1]]):
    z.store(gather(z, load_tile_like(idx, z)))
