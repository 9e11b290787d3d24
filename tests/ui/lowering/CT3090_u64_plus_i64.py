# `u64` and `i64` tiles in one expression
# consts: B=16
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i64, ["B"]]], x: Tensor[u64, [-1]], y: Tensor[i64, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))  #~ ERROR
