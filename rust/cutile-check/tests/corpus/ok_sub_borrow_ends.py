# expect: ok
# a sub-partition's borrow ends at its last use
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((64,))
    p.store(zeros((64,), f32), (0,))
    p.store(zeros((64,), f32), (1,))
    z.store(full((128,), 2.0, f32))
