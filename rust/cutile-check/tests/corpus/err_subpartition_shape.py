# expect: CT2005
# 48 does not divide 128
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((48,))
    p.store(zeros((48,), f32), (0,))
