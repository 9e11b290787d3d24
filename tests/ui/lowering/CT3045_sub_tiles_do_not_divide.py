# sub-tiles of 48 in a tile of 64
# consts: B=64 S=48
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, ["B"]]], S: Const[int], B: Const[int]):
    p = z.partition_mut((S,))  #~ ERROR
    p.store(zeros((S,), f32), (0,))
