# expect: CT1002
# a move in one iteration is a use after move in the next
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    for i in range(2):
        w = z
        w.store(zeros((128,), f32))
