# expect: CT1013
# an `Atomic` tensor is read only by atomic operations: a plain load races the others' updates
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]], counts: Atomic[Tensor[i32, [-1]]]):
    z.store(counts.load_tile((16,), (block_id(0),)))
