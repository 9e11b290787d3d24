# a tile shape from a runtime scalar
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], n: i32):
    z.store(zeros((n,), f32))  #~ ERROR
