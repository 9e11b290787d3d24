# expect: CT2012
# block b reads its own tile of z while block n-1-b writes that tile: a read-write race
# (each map alone is fine; found by the soundness fuzzer)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, [4]]]):
    b = block_id(0)
    t = z.load()
    z.store(t + b + 1, index=(num_tiles(z, 0) - 1 - b,))
