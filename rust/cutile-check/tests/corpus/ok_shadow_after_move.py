# expect: ok
# rebinding a moved name to a tile is fine
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    w = z
    z = zeros((128,), f32)
    w.store(z + 1.0)
