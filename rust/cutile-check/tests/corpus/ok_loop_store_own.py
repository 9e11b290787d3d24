# expect: ok
# storing the own tile in every iteration is ordered within the block
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    acc = zeros((128,), f32)
    for i in range(4):
        acc = acc + load_tile_like(x, z)
        z.store(acc)
