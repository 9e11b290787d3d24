# expect: ok
# a 3-level split of the block id, x = (c * B + b) * A + a, stored with the two low digits
# swapped: injective for every launch (mixed radix), in bounds when A * B divides the grid
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], A: Const[int], B: Const[int]):
    x = block_id(0)
    a = x % A
    b = (x // A) % B
    c = x // A // B
    z.store(zeros((128,), f32), index=(c * (A * B) + a * B + b,))
