# expect: ok
# two exclusive outputs, each storing its own tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], w: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    z.store(t)
    w.store(t * 2.0)
