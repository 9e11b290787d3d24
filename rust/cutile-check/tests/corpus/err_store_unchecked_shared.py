# expect: CT1001
# unsafe does not make a shared tensor writable
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    with cutile.unsafe():
        x.store_unchecked(zeros((128,), f32), (0,))
    z.store(zeros((128,), f32))
