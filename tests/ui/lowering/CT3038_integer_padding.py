# an integer tensor loaded with a float padding (tileiras refused the kernel, CT7004, and
# the interpreter stopped at run time)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((16,), (0,), padding="neg_inf"))  #~ ERROR
