# expect: ok
# GEMM: K loop over x's tile count is static, block-id rows tie x to the grid at launch
import cutile
from cutile.core import *

@cutile.entry
def gemm(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]], y: Tensor[f16, [-1, -1]],
         BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        a = x.load_tile((BM, BK), (block_id(0), k))
        b = y.load_tile((BK, BN), (k, block_id(1)))
        acc = mma(a, b, acc)
    z.store(acc.astype(f32))
