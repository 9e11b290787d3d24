# expect: ok
# docs/design.md §1: vector add, own-tile store, shared reads at z's position
import cutile
from cutile.core import *

@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
