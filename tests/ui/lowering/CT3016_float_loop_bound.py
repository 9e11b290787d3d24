# a loop bound that is not an integer
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], n: f32):
    for i in range(n):  #~ ERROR
        z.store(z.load())
