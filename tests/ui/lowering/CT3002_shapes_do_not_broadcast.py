# two tiles whose shapes do not broadcast
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16, 8]]]):
    z.store(zeros((16, 8), f32) + ones((8, 16), f32))  #~ ERROR
