"""The paper's bug: the store index has `m` and `h` swapped, so for fixed (b, m, h) the blocks
that differ only in which source head they read store to one destination tile: a data race
(the outcome depends on which write lands last).

cutile refuses to compile it. Try:

    python -m cutile check examples/race/permute_heads_racy.py

which prints the diagnostic (two block ids that collide) and exits with status 1.
"""

import cutile
from cutile.core import Const, Mut, Tensor, block_id, f32


@cutile.entry
def permute_heads_racy(dst: Mut[Tensor[f32, [1, "BM", "D"]]], src: Tensor[f32, [-1, -1, "D"]],
                       H: Const[int], BM: Const[int], D: Const[int]):
    bh = block_id(0)
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))
    dst.store(tile, index=(b * H + m, h, 0))     # BUG: `m` and `h` swapped


if __name__ == "__main__":
    try:
        permute_heads_racy.check()
    except cutile.KernelCheckError as err:
        print(err)
        print("rejected, as it should be")
    else:
        raise SystemExit("the racy kernel was accepted: the checker is broken")
