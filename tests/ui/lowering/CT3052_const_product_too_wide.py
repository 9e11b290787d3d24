# a product of Consts, 2^32, added to a 32-bit block id
# consts: C=65536
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], C: Const[int]):
    j = block_id(0) + C * C  #~ ERROR
    z.store(x.load_tile((16,), (j,)))
