# expect: CT1003
# a tensor and its sub-partition passed to one call
import cutile
from cutile.core import *

@cutile.device
def both(a: Mut[Tensor[f32, [128]]], b: Mut[Tensor[f32, [64]]]):
    a.store(zeros((128,), f32))

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    p = z.partition_mut((64,))
    both(z, p)
