# expect: ok
# moving back restores the original name
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    w = z
    z = w
    z.store(zeros((128,), f32))
