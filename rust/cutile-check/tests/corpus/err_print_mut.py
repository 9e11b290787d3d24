# expect: CT1010
# a `Mut` tensor cannot be printed (only tiles and numbers)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    print(f"{z}")
    z.store(zeros((128,), f32))
