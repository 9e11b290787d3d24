# expect: CT2013
# A range bound to a name first (the checker would read an unknown loop variable).
import cutile
from cutile.core import *


@cutile.entry
def k(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    for i in range(2):
        t = x.load_tile((4,), (i,))
        z.store(t)
    r = range(2)
    for i in r:
        z.store(full((4,), 1, i32))
