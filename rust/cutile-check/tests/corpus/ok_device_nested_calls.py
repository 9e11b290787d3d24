# expect: ok
# nested device calls reborrow through two levels
import cutile
from cutile.core import *

@cutile.device
def inner(o: Mut[Tensor[f32, [128]]], t):
    o.store(t)

@cutile.device
def outer(o: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    inner(o, load_tile_like(x, o))

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], x: Tensor[f32, [-1]]):
    outer(z, x)
