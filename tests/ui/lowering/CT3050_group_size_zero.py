# a persistent schedule with groups of 0 tiles
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [4, 8]]]):
    for idx in z.iter_indices(group=0):  #~ ERROR
        z.store(zeros((4, 8), f32), index=idx)
