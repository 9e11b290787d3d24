# expect: CT1009
# load_tile_like needs a Mut position source
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]]):
    t = load_tile_like(x, y)
    z.store(t)
