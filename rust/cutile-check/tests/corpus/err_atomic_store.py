# expect: CT1014
# a plain store to an `Atomic` tensor races the other blocks' atomic updates
import cutile
from cutile.core import *

@cutile.entry
def k(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]]):
    with cutile.unsafe():
        scatter(counts, x.load_tile((16,), (block_id(0),)), 0)
