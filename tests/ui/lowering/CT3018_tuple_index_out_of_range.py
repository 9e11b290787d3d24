# an index past the end of a tuple (the shape of a rank-1 tensor)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    n = z.shape[1]  #~ ERROR
    z.store(z.load())
