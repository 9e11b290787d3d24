# expect: CT1002
# rule 3: `w = z` moves; `z` is dead afterwards
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    w = z
    t = load_tile_like(x, w)
    z.store(t)
