# `@` of tiles whose inner dimensions differ
import cutile
from cutile.core import *

@cutile.entry
def k(c: Mut[Tensor[f32, [64, 64]]], a: Tensor[f32, [-1, -1]], b: Tensor[f32, [-1, -1]]):
    c.store(a.load_tile((64, 32), (0, 0)) @ b.load_tile((64, 64), (0, 0)))  #~ ERROR
