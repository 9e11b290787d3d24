# expect: CT2002
# rule 5: 2*b is injective but leaves the grid
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    z.store(zeros((128,), f32), index=(2 * block_id(0),))
