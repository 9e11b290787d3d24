# an atomic the element type does not have
import cutile
from cutile.core import *

@cutile.entry
def k(a: Atomic[Tensor[f32, [-1]]]):
    atomic_max(a, arange(16, i32), 1.0)  #~ ERROR
