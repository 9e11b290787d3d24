# expect: CT4006
# rule 6: pointer parameters need an unsafe entry
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], p: Ptr[f32]):
    z.store(zeros((128,), f32))
