# expect: CT2002
# the store index needs one component per partition axis
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    z.store(zeros((128,), f32), index=(block_id(0), 0))
