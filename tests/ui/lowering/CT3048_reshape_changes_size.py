# a reshape to another number of elements
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [4, 4]]]):
    z.store(z.load().reshape((4, 8)))  #~ ERROR
