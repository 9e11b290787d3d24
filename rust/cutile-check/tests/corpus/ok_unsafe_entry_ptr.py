# expect: ok
# pointer parameters and pointer ops in an unsafe entry
import cutile
from cutile.core import *

@cutile.entry(unsafe=True)
def k(p: Ptr[f32], n: i32):
    v = load_ptr(p, n)
    store_ptr(ptr_offset(p, 1), v)
