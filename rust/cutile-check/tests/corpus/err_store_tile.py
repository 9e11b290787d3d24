# expect: CT1008
# a loaded tile is a value, not a tensor
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    t.store(t)
