# expect: ok
# sub-partition stores with static in-bounds sub-indices
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((32,))
    for i in range(4):
        p.store(full((32,), 1.0, f32), (i,))
