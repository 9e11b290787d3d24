# expect: ok
# `w = z` moves the partition; storing through `w` is fine
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    w = z
    w.store(load_tile_like(x, w))
