# an `arange` of 12 elements
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]]):
    z.store(arange(0, 12))  #~ ERROR
