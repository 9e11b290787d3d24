# a per-architecture latency with one value outside 1-10
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    lat = cutile.ByTarget(sm_90=3, sm_100=12)  #~ ERROR
    z.store(x.load_tile((64,), (block_id(0),), latency=lat))
