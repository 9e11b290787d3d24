# expect: CT2011
# a persistent kernel's blocks own the tiles its schedule mints, not the tile at their block id
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    for idx in z.iter_indices():
        z.store(load_tile_like(x, z), index=idx)
