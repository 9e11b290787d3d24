# `+` on a pointer (use `ptr_offset`)
import cutile
from cutile.core import *

@cutile.entry(unsafe=True)
def k(p: Ptr[f32]):
    v = load_ptr(p + 1)  #~ ERROR
