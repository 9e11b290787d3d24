# expect: ok
# the launch is persistent through a device function that walks the schedule
import cutile
from cutile.core import *

@cutile.device
def walk(o: Mut[Tensor[f32, [64]]], x):
    for i in o.iter_indices():
        o.store(x.load_tile((64,), i) * 2.0, index=i)

@cutile.entry
def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    walk(z, x)
