# expect: CT1001
# rule 2: no mutable sub-partition of a shared tensor
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [256]]):
    p = x.partition_mut((32,))
    z.store(zeros((128,), f32))
