# expect: CT2001
# rule 5: b // 2 sends blocks 0 and 1 to tile 0 (found on a small launch)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    z.store(zeros((128,), f32), index=(block_id(0) // 2,))
