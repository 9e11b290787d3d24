# an `assume_div_by` hint with divisor 0
import cutile
from cutile.core import *

@cutile.entry(unsafe=True)
def k(z: Mut[Tensor[f32, [16]]], n: i32):
    m = assume_div_by(n, 0)  #~ ERROR
    z.store(z.load())
