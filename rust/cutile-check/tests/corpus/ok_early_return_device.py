# expect: ok
# device function with early return of a tile
import cutile
from cutile.core import *

@cutile.device
def pick(x: Tensor[f32, [-1]], o: Mut[Tensor[f32, [128]]], flag):
    if flag:
        return load_tile_like(x, o)
    return zeros((128,), f32)

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]], flag: i32):
    t = pick(x, z, flag > 0)
    z.store(t)
