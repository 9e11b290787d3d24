# an entry kernel returns a value
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    return z.load() * 2  #~ ERROR
