# expect: ok
# a device function that returns the same input on every path
import cutile
from cutile.core import *

@cutile.device
def pick(a, n):
    if n == 1:
        return a
    return a

@cutile.entry
def k(z: Mut[Tensor[i32, [4]]], a: Tensor[i32, [-1]], C: Const[int]):
    x = pick(a, C)
    z.store(load_tile_like(x, z))
