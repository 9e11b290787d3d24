# expect: CT1017
# a device function's plain `Tensor` parameter would read an `Atomic` tensor without atomics
import cutile
from cutile.core import *

@cutile.device
def first(t: Tensor[i32, [-1]]):
    return t.load_tile((16,), (0,))

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]], counts: Atomic[Tensor[i32, [-1]]]):
    z.store(first(counts))
