# expect: CT4005
# the checker reads a combiner's body (it is written as a call of it): an unsafe op there
# needs `unsafe` too
import cutile
from cutile.core import *


@cutile.device
def hinted(a, b):
    return assume_div_by(a, 16) + b


@cutile.entry
def k(z: Mut[Tensor[i32, [16]]], x: Tensor[i32, [-1, -1]]):
    z.store(reduce(x.load_tile((16, 16), (block_id(0), 0)), 1, hinted, 0))
