# expect: CT1004
# the owner is used while its sub-partition is still live
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((64,))
    z.store(zeros((128,), f32))
    p.store(zeros((64,), f32), (0,))
