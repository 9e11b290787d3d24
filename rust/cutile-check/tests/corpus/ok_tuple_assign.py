# expect: ok
# tuple assignment moves element-wise
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    a, b = z, x
    a.store(load_tile_like(b, a))
