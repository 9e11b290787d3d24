# expect: CT2006
# sub-tile 4 of 4 is past the own tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((32,))
    for i in range(5):
        p.store(zeros((32,), f32), (i,))
