# expect: CT1018
# a block-scoped atomic is atomic only inside one block; every block shares `counts`
import cutile
from cutile.core import *

@cutile.entry
def k(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]]):
    atomic_add(counts, x.load_tile((16,), (block_id(0),)), 1, scope="block")
