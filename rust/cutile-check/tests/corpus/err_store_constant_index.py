# expect: CT2001
# rule 5: every block stores to tile 0
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    z.store(zeros((128,), f32), index=(0,))
