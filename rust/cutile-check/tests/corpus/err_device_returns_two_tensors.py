# expect: CT1010
# a device function that returns one input on a path and another on another: the caller
# gets neither, and the checker cannot follow which tensor it loads from
import cutile
from cutile.core import *

@cutile.device
def pick(a, b, n):
    if n == 1:
        return a
    return b

@cutile.entry
def k(z: Mut[Tensor[i32, [4]]], a: Tensor[i32, [64]], b: Tensor[i32, [4]], C: Const[int]):
    x = pick(a, b, C)
    z.store(x.load_tile((4,), (block_id(0) + 3,)))
