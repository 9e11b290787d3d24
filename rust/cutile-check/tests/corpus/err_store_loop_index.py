# expect: CT2003
# rule 5: an index depending on a loop variable
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    for i in range(2):
        z.store(zeros((128,), f32), index=(2 * block_id(0) + i,))
