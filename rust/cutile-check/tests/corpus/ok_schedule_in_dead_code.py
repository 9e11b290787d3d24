# expect: ok
# A persistent walk in a branch that never runs: no output is persistent, and the kernel
# is read as a regular launch (its grid facts are those of the own tile).
import cutile
from cutile.core import *


@cutile.entry
def k(z: Mut[Tensor[i32, [4]]]):
    if False:
        for idx in z.iter_indices():
            z.store(full((4,), 2, i32), index=idx)
    z.store(full((4,), 1, i32))
