# a `bitcast` from 32-bit to 16-bit elements
# consts: B=16
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i16, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(bitcast(load_tile_like(x, z), i16))  #~ ERROR
