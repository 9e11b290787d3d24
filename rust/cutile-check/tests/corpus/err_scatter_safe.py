# expect: CT4003
# rule 6: scatter needs unsafe
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], out: Tensor[f32, [-1]], idx: Tensor[i32, [-1]]):
    t = load_tile_like(idx, z)
    scatter(out, t, z.load())
    z.store(zeros((128,), f32))
