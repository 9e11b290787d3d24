# expect: ok
# a persistent kernel reads and writes each minted tile through the same index
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16, 16]]], x: Tensor[f32, [-1, -1]]):
    for idx in z.iter_indices():
        t = z.load(index=idx)
        z.store(t + x.load_tile((16, 16), idx), index=idx)
