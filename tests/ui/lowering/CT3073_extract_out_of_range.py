# `extract` of a sub-tile past the last
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    t = x.load_tile((16,), (block_id(0),))
    z.store(extract(t, (4,), (4,)))  #~ ERROR
