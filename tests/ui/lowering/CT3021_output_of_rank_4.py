# a partitioned output of rank 4 (one grid axis per dimension: at most 3)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [1, 1, 1, 16]]]):
    z.store(z.load())  #~ ERROR
