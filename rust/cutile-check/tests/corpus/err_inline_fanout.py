# expect: CT1019
# every call site of a device function is inlined: each level doubles the code
import cutile
from cutile.core import *

@cutile.device
def smooth(t):
    return 0.5 * t + 0.25

@cutile.device
def twice(t):
    return smooth(smooth(t))

@cutile.device
def four(t):
    return twice(twice(t))

@cutile.device
def sixteen(t):
    return four(four(four(four(t))))

@cutile.device
def many(t):
    return sixteen(sixteen(sixteen(sixteen(sixteen(sixteen(sixteen(sixteen(t))))))))

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z)
    t = many(many(many(t)))
    z.store(t)
