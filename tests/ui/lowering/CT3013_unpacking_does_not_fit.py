# unpacking two values into three names
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16, 8]]]):
    m, n, p = z.shape  #~ ERROR
    z.store(z.load())
