# `.item()` of a tile of 16 elements
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    s = z.load().item()  #~ ERROR
    z.store(full((16,), s, f32))
