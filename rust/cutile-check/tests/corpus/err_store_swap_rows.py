# expect: CT2001
# rule 5: the paper's race, a store index that ignores one block axis
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [64, 64]]]):
    m = block_id(0)
    h = block_id(1)
    z.store(zeros((64, 64), f32), index=(m, m))
