# expect: CT2007
# tile 8 of a 1024-element tensor in tiles of 128 does not exist
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [1024]]):
    z.store(x.load_tile((128,), (8,)))
