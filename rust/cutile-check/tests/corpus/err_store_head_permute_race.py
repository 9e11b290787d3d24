# expect: CT2001
# rule 5: the paper's race: `m` and `h` swapped in the store index of the head permutation;
# a transpose when M/BM == H, but two blocks store one tile on any other launch
import cutile
from cutile.core import *

@cutile.entry
def permute_heads_racy(dst: Mut[Tensor[f32, [1, "BM", "D"]]], src: Tensor[f32, [-1, -1, "D"]],
                       H: Const[int], BM: Const[int], D: Const[int]):
    bh = block_id(0)
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))
    dst.store(tile, index=(b * H + m, h, 0))
