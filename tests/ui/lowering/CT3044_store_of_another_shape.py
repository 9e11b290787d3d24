# storing a tile of another shape than the output's tiles
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(zeros((32,), f32))  #~ ERROR
