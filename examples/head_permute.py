"""Head permutation, the race example of "Fearless Concurrency on the GPU" (§3), written so
that the checker can prove it race-free.

A (B, H, M, D) attention tensor has its heads reversed: dst[b, h] = src[b, H - 1 - h]. On the
host it is viewed as (B*H, M, D) (a partition has at most three dimensions, one per grid
axis); block (b*H + h, m) moves one (1, BM, D) tile. The kernel computes its destination
index from its block id, like the paper's cuTile Python kernel; the checker proves that the
map block id -> destination tile is injective and in bounds. The paper's bug (`m` and `h`
swapped in the store index) is in `race/permute_heads_racy.py`: the checker rejects it with
two blocks that would write the same tile.

    python examples/head_permute.py
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f32


@cutile.entry
def permute_heads(dst: Mut[Tensor[f32, [1, "BM", "D"]]], src: Tensor[f32, [-1, -1, "D"]],
                  H: Const[int], BM: Const[int], D: Const[int]):
    bh = block_id(0)                      # b * H + h
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))   # reversed head
    dst.store(tile, index=(b * H + h, m, 0))                         # computed destination


def reference(src: np.ndarray, b: int, h: int) -> np.ndarray:
    m, d = src.shape[1:]
    try:  # on the GPU machine, the reference comes from torch
        import torch

        if torch.cuda.is_available():
            t = torch.from_numpy(src).cuda().reshape(b, h, m, d).flip(1).reshape(b * h, m, d)
            return t.cpu().numpy()
    except ImportError:
        pass
    return src.reshape(b, h, m, d)[:, ::-1].reshape(b * h, m, d)


def main(b: int = 2, h: int = 8, m: int = 512, d: int = 64, bm: int = 32) -> None:
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((b * h, m, d), dtype=np.float32)
    src = api.from_numpy(xs)
    dst = api.full([b * h, m, d], np.nan, f32).partition([1, bm, d])
    dst, src = permute_heads(dst, src, H=h).sync()
    out = dst.unpartition().to_numpy()
    ref = reference(xs, b, h)
    assert np.array_equal(out, ref), f"{np.count_nonzero(out != ref)} elements differ"
    report = permute_heads.check_report()
    proofs = sorted({f"{o.kind}: {o.discharged}" for o in report})
    print(f"head_permute: B={b} H={h} M={m} D={d}: every element matches the reference; "
          f"checker: {'; '.join(proofs)}")


if __name__ == "__main__":
    main()
