# expect: ok
# `(a * b + c) % n` permutes the n tiles when gcd(a, n) == 1: a launch predicate per prime of a
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], C: Const[int]):
    z.store(zeros((16,), f32), index=((6 * block_id(0) + C) % num_blocks(0),))
