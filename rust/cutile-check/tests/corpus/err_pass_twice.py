# expect: CT1003
# rule 3: the same Mut passed twice to one call
import cutile
from cutile.core import *

@cutile.device
def copy(a: Mut[Tensor[f32, [128]]], b: Mut[Tensor[f32, [128]]]):
    a.store(b.load())

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    copy(z, z)
