# expect: ok
# the scan, arg-reduction, custom-reduce and tile-piece operations are pure values
import cutile
from cutile.core import *


@cutile.device
def absmax(a, b):
    return maximum(abs(a), abs(b))


@cutile.entry
def k(z: Mut[Tensor[f32, [16, 32]]], w: Mut[Tensor[i32, [16]]], x: Tensor[f32, [-1, -1]],
      B: Const[int]):
    t = x.load_tile((16, 64), (block_id(0), 0))
    run = cumsum(t, 1) + cumprod(t[:, :1], axis=1, reverse=True)
    peak = reduce(t, 1, absmax, 0.0, keepdims=True)
    halves = cat((t[:, :16], extract(t, (0, 3), (16, 16))), 1)
    z.store(run[:, 32:] / peak + halves + arange(0, B)[None, :B].astype(f32))
    w.store(argmax(t, axis=1) + argmin(t, 1))
