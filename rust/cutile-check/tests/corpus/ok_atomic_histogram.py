# expect: ok
# an `Atomic` parameter: every block adds into any bin, atomically; gather reads a shared input
import cutile
from cutile.core import *

@cutile.device
def bump(counts: Atomic[Tensor[i32, [-1]]], bins):
    return atomic_add(counts, bins, 1, memory_order="relaxed")

@cutile.entry
def k(counts: Atomic[Tensor[i32, [-1]]], total: Atomic[Tensor[f32, [1]]],
      x: Tensor[i32, [-1]], w: Tensor[f32, [-1]], B: Const[int]):
    bins = x.load_tile((B,), (block_id(0),)) % counts.shape[0]
    old = bump(counts, bins)
    weights = gather(w, arange(B, i32) + block_id(0) * B, padding=0.0)
    atomic_add(total, zeros((B,), i32), weights, scope="system")
    atomic_max(counts, bins, old)
