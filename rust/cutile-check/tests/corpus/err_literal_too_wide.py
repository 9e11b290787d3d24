# expect: CT3052
# a literal meets a 32-bit block id: the device would compute with a truncated constant
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    j = block_id(0) + 4294967297
    z.store(x.load_tile((128,), (block_id(0),)))
