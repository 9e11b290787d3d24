# a method of tiles called on an output tensor
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(z.sum())  #~ ERROR
