# `permute` with an axis twice
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [4, 4]]]):
    z.store(z.load().permute((0, 0)))  #~ ERROR
