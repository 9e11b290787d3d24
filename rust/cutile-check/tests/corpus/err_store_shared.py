# expect: CT1001
# rule 2: a plain Tensor is read-only
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    x.store(t)
