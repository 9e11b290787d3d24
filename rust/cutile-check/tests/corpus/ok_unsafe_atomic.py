# expect: ok
# atomics are allowed inside `with cutile.unsafe():`
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], counter: Tensor[i32, [1]]):
    with cutile.unsafe():
        atomic_add(counter, 0, 1)
    z.store(zeros((128,), f32))
