# expect: CT1010
# rule 3: `a, b = z, z` would leave two live names for one output
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    a, b = z, z
    a.store(zeros((128,), f32))
    b.store(ones((128,), f32))
