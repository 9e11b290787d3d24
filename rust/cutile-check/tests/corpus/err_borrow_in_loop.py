# expect: CT1004
# a borrow used in the next iteration conflicts with a use in this one
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((64,))
    for i in range(2):
        p.store(zeros((64,), f32), (i,))
        z.store(zeros((128,), f32))
