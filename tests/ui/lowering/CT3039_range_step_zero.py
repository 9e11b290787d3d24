# a `range` whose step is not a positive integer
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    for i in range(0, 4, 0):  #~ ERROR
        z.store(z.load())
