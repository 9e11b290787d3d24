# a loop-carried variable that changes its element type
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    acc = zeros((16,), f16)
    for i in range(4):  #~ ERROR
        acc = acc + z.load()
    z.store(acc)
