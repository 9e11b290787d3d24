# a tile dimension that is not a power of two
# consts: B=48
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    z.store(z.load())  #~ ERROR
