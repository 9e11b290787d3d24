# expect: CT2002
# rule 5: the last block stores past the grid
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    z.store(zeros((128,), f32), index=(block_id(0) + 1,))
