# expect: CT1004
# two live sub-partitions of one tensor
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((64,))
    q = z.partition_mut((32,))
    p.store(zeros((64,), f32), (0,))
    q.store(zeros((32,), f32), (3,))
