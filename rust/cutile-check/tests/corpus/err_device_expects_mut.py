# expect: CT1011
# a shared tensor passed for a Mut parameter
import cutile
from cutile.core import *

@cutile.device
def write(o: Mut[Tensor[f32, [128]]], t):
    o.store(t)

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    write(x, t)
    z.store(t)
