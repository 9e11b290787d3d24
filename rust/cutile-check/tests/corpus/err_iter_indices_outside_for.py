# expect: CT2013 CT2013 CT2003
# `iter_indices()` bound to a name and walked later: the schedule is written in the header.
import cutile
from cutile.core import *


@cutile.entry
def k(z: Mut[Tensor[i32, [4]]]):
    walk = z.iter_indices()
    for idx in walk:
        z.store(full((4,), 1, i32), index=idx)
