# expect: ok
# `for i, j in z.iter_indices()`: the unpacked minted index stores and loads like `idx`
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [32, 32]]], x: Tensor[f32, [-1, -1]]):
    for i, j in z.iter_indices():
        z.store(x.load_tile((32, 32), (j, i)).transpose(), index=(i, j))
