# expect: ok
# read-modify-write of the block's own tile
import cutile
from cutile.core import *

@cutile.entry
def scale(z: Mut[Tensor[f32, [128]]], s: f32):
    t = z.load()
    z.store(t * s)
