# expect: ok
# break/continue with the Mut used only through its owner
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]):
    acc = zeros((16,), f32)
    for i in range(8):
        if i == 3:
            continue
        if i == 6:
            break
        acc = acc + x.load_tile((16,), (i,))
    z.store(acc)
