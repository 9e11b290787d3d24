# expect: CT3031
# a sub-partition cannot be partitioned again (the compiler has no nested sub-partitions): partition once, with the finest shape
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128, 128]]]):
    p = z.partition_mut((64, 64))
    q = p.partition_mut((32, 32))
    q.store(zeros((32, 32), f32), (1, 1))
