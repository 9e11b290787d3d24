# expect: ok
# persistent kernel: stores through indices minted by iter_indices()
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128, 128]]], x: Tensor[f32, [-1, -1]]):
    for idx in z.iter_indices():
        t = x.load_tile((128, 128), idx)
        z.store(t * 2.0, index=idx)
