# expect: CT4002
# an unsafe block does not cover the body of a called device function
import cutile
from cutile.core import *

@cutile.device
def bump(c: Tensor[i32, [1]]):
    atomic_add(c, 0, 1)

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], c: Tensor[i32, [1]]):
    with cutile.unsafe():
        bump(c)
    z.store(zeros((128,), f32))
