# a store hint under a name stores do not take (`allow_tma=` is the TMA hint)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(z.load(), tma=False)  #~ ERROR
