"""Top-k of every row of an (M, N) f32 matrix, largest first, with the values and their
column indices: block i owns (BM, K) tiles of both outputs, loads (BM, BN) rows (BN >= N,
padded with -inf past the row) and K times takes `argmax` along the row, writes the
value and index into column r of its results with `where`, and masks the winner out with
-inf. K is the power of two at or above k; the result columns past k are dropped at the
store. (Rows that fit one tile, which an `assert` checks; ties would go to the first
index, as numpy's.)

Every element is checked against a float64 numpy reference (a stable argsort).

    python examples/topk.py
"""

from __future__ import annotations

import math

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, arange, argmax, block_id, f32, i32, where, zeros


@cutile.entry
def topk(vals: Mut[Tensor[f32, ["BM", "K"]]], idxs: Mut[Tensor[i32, ["BM", "K"]]],
         x: Tensor[f32, [-1, -1]], BM: Const[int], K: Const[int], BN: Const[int]):
    assert x.shape[1] <= BN, "a row must fit one tile"
    t = x.load_tile((BM, BN), (block_id(0), 0), padding="neg_inf")
    cols = arange(BN, i32)[None, :]
    slot = arange(K, i32)[None, :]
    top_v = zeros((BM, K), f32)
    top_i = zeros((BM, K), i32)
    for r in range(K):
        best = argmax(t, axis=1, keepdims=True)            # (BM, 1)
        top_v = where(slot == r, t.max(axis=1, keepdims=True), top_v)
        top_i = where(slot == r, best, top_i)
        t = where(cols == best, -math.inf, t)
    vals.store(top_v)
    idxs.store(top_i)


def next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def main(m: int = 300, n: int = 1000, k: int = 5, bm: int = 4) -> None:
    assert k <= n, "k past the row length"
    rng = np.random.default_rng(27)
    xs = rng.standard_normal((m, n)).astype(np.float32)
    bk = next_pow2(k)
    vals = api.full([m, k], np.nan, f32).partition([bm, bk])
    idxs = api.full([m, k], -1, i32).partition([bm, bk])
    vals, idxs, _ = topk(vals, idxs, api.from_numpy(xs), BN=next_pow2(n)).sync()
    want_i = np.argsort(-xs.astype(np.float64), axis=1, kind="stable")[:, :k]
    want_v = np.take_along_axis(xs.astype(np.float64), want_i, axis=1)
    np.testing.assert_array_equal(idxs.unpartition().to_numpy(), want_i)
    np.testing.assert_array_equal(vals.unpartition().to_numpy().astype(np.float64), want_v)
    print(f"topk: top {k} of {m} rows of {n} (K={bk}, rows of {next_pow2(n)}): exact")


if __name__ == "__main__":
    main()
