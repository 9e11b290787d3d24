# expect: ok
# symbolic sub-tile: divisibility becomes a launch predicate, loop bound proves the index
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, ["B"]]], B: Const[int], S: Const[int]):
    p = z.partition_mut((S,))
    for i in range(B // S):
        p.store(zeros((S,), f32), (i,))
