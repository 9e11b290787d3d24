# expect: CT2003
# rule 5: b // 2 is not affine (and not injective)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    z.store(zeros((128,), f32), index=(block_id(0) // 2,))
