# expect: CT1016
# an `Atomic` tensor put in a tuple is lost to the analysis
import cutile
from cutile.core import *

@cutile.entry
def k(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]]):
    pair = (counts, x)
    atomic_add(pair[0], arange(16, i32), 1)
