# expect: CT1002
# moving the same tensor twice
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    a = z
    b = z
    b.store(zeros((128,), f32))
