# a constant expression that cannot be evaluated
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(full((16,), int("x"), f32))  #~ ERROR
