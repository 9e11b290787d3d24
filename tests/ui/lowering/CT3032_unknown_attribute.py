# an attribute tensors do not have
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    n = z.size  #~ ERROR
    z.store(z.load())
