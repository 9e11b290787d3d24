# expect: ok
# 2-D sub-partition stores over both sub-grid axes
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128, 64]]]):
    p = z.partition_mut((32, 32))
    for i in range(4):
        for j in range(2):
            p.store(zeros((32, 32), f32), (i, j))
