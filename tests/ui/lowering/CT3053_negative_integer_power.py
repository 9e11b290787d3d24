# an integer tile raised to a negative power
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]]):
    z.store(z.load() ** -1)  #~ ERROR
