# expect: ok
# atomics on an output are allowed inside `with cutile.unsafe():`
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], idx: Tensor[i32, [-1]]):
    z.store(zeros((128,), f32))
    with cutile.unsafe():
        atomic_add(z, load_tile_like(idx, z), 1.0)
