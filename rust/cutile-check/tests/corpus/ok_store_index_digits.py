# expect: ok
# the head permutation of "Fearless Concurrency on the GPU" §3: a (B, H, M, D) tensor viewed
# as (B*H, M, D); the store index b * H + h folds back to block_id(0) (x // H * H + x % H == x)
import cutile
from cutile.core import *

@cutile.entry
def permute_heads(dst: Mut[Tensor[f32, [1, "BM", "D"]]], src: Tensor[f32, [-1, -1, "D"]],
                  H: Const[int], BM: Const[int], D: Const[int]):
    bh = block_id(0)          # b * H + h
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))   # read the reversed head
    dst.store(tile, index=(b * H + h, m, 0))
