# an atomic memory order Tile IR does not have
import cutile
from cutile.core import *

@cutile.entry
def k(a: Atomic[Tensor[f32, [-1]]]):
    atomic_add(a, arange(16, i32), 1.0, memory_order="seq_cst")  #~ ERROR
