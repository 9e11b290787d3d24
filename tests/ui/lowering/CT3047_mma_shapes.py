# `mma` of operands whose inner dimensions differ
import cutile
from cutile.core import *

@cutile.entry
def k(c: Mut[Tensor[f32, [64, 64]]], a: Tensor[f16, [-1, -1]], b: Tensor[f16, [-1, -1]]):
    ta = a.load_tile((64, 32), (0, 0))
    tb = b.load_tile((64, 64), (0, 0))
    c.store(mma(ta, tb, zeros((64, 64), f32)))  #~ ERROR
