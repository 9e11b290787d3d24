# a store's `allow_tma` that is not True or False
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    z.store(x.load_tile((64,), (block_id(0),)), allow_tma=1)  #~ ERROR
