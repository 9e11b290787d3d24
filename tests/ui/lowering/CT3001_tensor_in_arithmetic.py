# a tensor parameter used as a number: load a tile of it first
# consts: B=16
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(x + 1.0)  #~ ERROR
