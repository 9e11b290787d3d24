# expect: CT1015
# an `Atomic` tensor has no tiles: it cannot give a tile position
import cutile
from cutile.core import *

@cutile.entry
def k(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]]):
    t = load_tile_like(x, counts)
    atomic_add(counts, t, 1)
