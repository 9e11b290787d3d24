# an `assume_div_by` hint with a divisor that is not a power of two (Tile IR's `div_by`
# takes only those: tileiras refused the kernel, CT7004, and the interpreter ran it)
import cutile
from cutile.core import *

@cutile.entry(unsafe=True)
def k(z: Mut[Tensor[f32, [16]]], n: i32):
    m = assume_div_by(n, 12)  #~ ERROR
    z.store(z.load())
