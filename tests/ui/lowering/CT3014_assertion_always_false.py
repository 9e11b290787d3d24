# an assertion that is false for these Const values
# consts: B=16
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    assert B % 2 == 1  #~ ERROR
    z.store(z.load())
