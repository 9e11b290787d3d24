# a name assigned on one branch only, used after it
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], n: i32):
    if n > 0:
        t = z.load()
    z.store(t)  #~ ERROR
