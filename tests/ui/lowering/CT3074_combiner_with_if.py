# a `reduce` combiner with an `if` statement
import cutile
from cutile.core import *

@cutile.device
def larger(a, b):
    m = b
    if a > b:  #~ ERROR
        m = a
    return m

@cutile.entry
def k(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1, -1]]):
    z.store(reduce(x.load_tile((4, 16), (block_id(0), 0)), 1, larger, -1e30))
