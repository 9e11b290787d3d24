# `cat` of tiles that differ off the joined axis
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16, 8]]]):
    a = zeros((8, 8), f32)
    b = zeros((8, 4), f32)
    z.store(cat((a, b), 0))  #~ ERROR
