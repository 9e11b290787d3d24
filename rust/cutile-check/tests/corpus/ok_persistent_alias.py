# expect: ok
# the launch is persistent through an alias: the facts say so, not a second reading
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]], x: Tensor[f32, [-1, -1]]):
    w = z
    for idx in w.iter_indices(group=4):
        w.store(x.load_tile((64, 64), idx), index=idx)
