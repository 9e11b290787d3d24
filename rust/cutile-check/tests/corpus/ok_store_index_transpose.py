# expect: ok
# axis permutation: injective; in bounds iff the grid is square (launch predicate)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    i = block_id(0)
    j = block_id(1)
    z.store(zeros((64, 64), f32), index=(j, i))
