"""A GEMM autotuned over tile shapes and compiler hints: the first call of a shape class
times every config on the GPU (on copies of the output) and keeps the fastest, on disk
too, so the next run starts with it; every element is checked against a float64 reference.

    CUTILE_LOG=info python examples/autotune_gemm.py
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f16, f32, mma, num_tiles, zeros


@cutile.entry
def gemm(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]],
         y: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        a = x.load_tile((BM, BK), (block_id(0), k))
        b = y.load_tile((BK, BN), (k, block_id(1)))
        acc = mma(a, b, acc)
    z.store(acc)


tuned_gemm = cutile.autotune(gemm, configs=[
    cutile.Config({"BM": 64, "BN": 64, "BK": 32}),
    cutile.Config({"BM": 128, "BN": 128, "BK": 64}),
    cutile.Config({"BM": 128, "BN": 128, "BK": 64}, occupancy=2),
    cutile.Config({"BM": 128, "BN": 256, "BK": 64}, num_ctas=2),
], key=["x", "y"])


def main(m: int = 4096, n: int = 4096, k: int = 4096) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    op = tuned_gemm(api.zeros([m, n], f32), api.from_numpy(a), api.from_numpy(b))
    z, _, _ = op.sync()
    out = z.to_numpy().astype(np.float64)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(out - ref).max() / np.abs(ref).max()
    assert err < 1e-3, f"max error {err:.3g} of the largest element"
    times = ", ".join(f"#{i} {t * 1e6:.0f} us" for i, t in sorted(op.choice.times.items()))
    print(f"autotune_gemm: {m}x{n}x{k} with {op.config} ({op.choice.how}"
          f"{': ' + times if times else ''}): max error {err:.1e}")


if __name__ == "__main__":
    main()
