# a constant tile index below 0
import cutile
from cutile.core import *

@cutile.entry(unsafe=True)
def k(z: Mut[Tensor[f32, [16]]]):
    z.store_unchecked(zeros((16,), f32), (-1,))  #~ ERROR
