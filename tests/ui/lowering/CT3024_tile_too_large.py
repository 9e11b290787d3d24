# a broadcast that makes a tile of 2^25 elements
# consts: M=4096 N=8192
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [1, 1]]], M: Const[int], N: Const[int]):
    t = zeros((M, 1), f32) + zeros((1, N), f32)  #~ ERROR
    z.store(t.sum(axis=0, keepdims=True).sum(axis=1, keepdims=True))
