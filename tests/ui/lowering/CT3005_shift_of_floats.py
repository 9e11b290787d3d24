# an operator the element type does not have
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    t = z.load()
    z.store(t << 1)  #~ ERROR
