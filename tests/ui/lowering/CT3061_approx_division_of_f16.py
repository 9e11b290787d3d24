# an approximate division of f16 tiles (f32 only)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f16, [16]]], x: Tensor[f16, [-1]]):
    h = load_tile_like(x, z)
    z.store(truediv(h, 3.0, rounding="approx"))  #~ ERROR
