# a grid axis other than 0, 1, 2
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    b = block_id(3)  #~ ERROR
    z.store(z.load())
