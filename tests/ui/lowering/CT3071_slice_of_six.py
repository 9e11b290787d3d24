# a tile slice of 6 elements
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1]]):
    t = x.load_tile((16,), (block_id(0),))
    z.store(t[1:7])  #~ ERROR
