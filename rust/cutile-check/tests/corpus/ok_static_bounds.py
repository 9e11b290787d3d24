# expect: ok
# constant tile index inside a static shape
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [1024]]):
    z.store(x.load_tile((128,), (7,)))
