# a one-entry tile index into a rank-2 partition
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1, -1]]):
    z.store(x.load_tile((16, 1), (0,)).reshape((16,)))  #~ ERROR
