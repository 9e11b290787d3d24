# expect: CT2005
# sub-partition rank must match the tile rank
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128, 128]]]):
    p = z.partition_mut((32,))
    z.store(zeros((128, 128), f32))
