# a load latency hint outside 1-10
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    z.store(x.load_tile((64,), (block_id(0),), latency=20))  #~ ERROR
