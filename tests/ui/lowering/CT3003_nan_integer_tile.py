# an integer tile filled with NaN (a bare ValueError from the compiler before)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]]):
    z.store(full((16,), float("nan"), i32))  #~ ERROR
