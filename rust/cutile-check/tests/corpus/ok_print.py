# expect: ok
# device print reads its operands and touches no memory
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]], n: i32):
    t = load_tile_like(x, z)
    print("block", block_id(0), "n =", n)
    print(f"t = {t:.3f} max={t.max()}")
    z.store(t)
