# expect: CT4004
# rule 6: unchecked stores need unsafe
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    z.store_unchecked(zeros((128,), f32), (0,))
