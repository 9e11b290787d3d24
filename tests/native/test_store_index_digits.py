"""Store indices built with `//` and `%` (the head permutation of "Fearless Concurrency on
the GPU" §3) through the real frontend and `_native.check_kernel`: the correct kernel is
accepted with launch predicates the host can evaluate, and the racy one is rejected with a
pair of blocks that really store the same tile."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cutile
from cutile import _native, api
from cutile.core import Const, Mut, Tensor, block_id, f32

pytest.importorskip("cutile.frontend.to_kast")


@cutile.entry
def permute_heads(
    dst: Mut[Tensor[f32, [1, "BM", "D"]]],
    src: Tensor[f32, [-1, -1, "D"]],
    H: Const[int],
    BM: Const[int],
    D: Const[int],
):
    bh = block_id(0)
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))
    dst.store(tile, index=(b * H + h, m, 0))


@cutile.entry
def permute_heads_racy(
    dst: Mut[Tensor[f32, [1, "BM", "D"]]],
    src: Tensor[f32, [-1, -1, "D"]],
    H: Const[int],
    BM: Const[int],
    D: Const[int],
):
    bh = block_id(0)
    m = block_id(1)
    b = bh // H
    h = bh % H
    tile = src.load_tile((1, BM, D), (b * H + (H - 1 - h), m, 0))
    dst.store(tile, index=(b * H + m, h, 0))


def check(kernel) -> _native.CheckResult:
    return _native.check_kernel(str(kernel.kast_json()))


def launch(h: int, heads: int, rows: int, d_tiles: int = 1) -> np.ndarray:
    """`permute_heads` on the interpreter: `heads` (a multiple of `h`) heads of `rows` rows
    of D = 64, BM = 32; `d_tiles` tiles of D per head in the output partition."""
    rng = np.random.default_rng(heads * 31 + rows)
    data = rng.standard_normal((heads, rows, 64)).astype(np.float32)
    src = api.from_numpy(data)
    dst = api.zeros([heads, 32 * 2, 64 * d_tiles], f32).partition([1, 32, 64])
    dst, src = permute_heads(dst, src, H=h).sync()
    return data, dst.unpartition().to_numpy()


def test_correct_head_permutation_is_accepted_with_launch_predicates() -> None:
    result = check(permute_heads)
    assert result.ok, result.rendered()
    by_kind = {(o.kind, o.predicate) for o in result.obligations}
    assert ("store-index-injective", "grid(2) <= 1 && 1 <= H") in by_kind
    assert ("bounds", "1 <= H && H * cdiv(grid(0), H) <= dim(src, 0)") in by_kind
    assert all(o.discharged in {"static", "launch"} for o in result.obligations)
    # B = 2, H = 4 on a (B*H, 2, 1) grid: every predicate holds, and the heads are reversed
    # within each group of H.
    data, out = launch(4, 8, 64)
    want = data.reshape(2, 4, 64, 64)[:, ::-1].reshape(8, 64, 64)
    np.testing.assert_array_equal(out, want)
    # A partition with two tiles on the D axis, or H = 0, is refused at launch; so is a
    # source with fewer rows than the grid reads (checked before anything runs).
    for bad in (dict(d_tiles=2), dict(h=0)):
        args = {"h": 4, "heads": 8, "rows": 64, **bad}
        with pytest.raises(cutile.LaunchError) as info:
            launch(**args)
        assert info.value.code in ("CT6200", "CT6201", "CT6103"), info.value


def test_racy_head_permutation_is_rejected_with_a_real_pair() -> None:
    result = check(permute_heads_racy)
    [d] = result.diagnostics
    assert d.code == "CT2001"
    m = re.fullmatch(
        r"with H = (\d+) and grid \((\d+), (\d+), (\d+)\): blocks \((\d+), (\d+), (\d+)\) "
        r"and \((\d+), (\d+), (\d+)\) both store to tile \((\d+), (\d+), (\d+)\) of `dst`",
        d.message,
    )
    assert m, d.message
    v = [int(x) for x in m.groups()]
    h, grid, a, b, tile = v[0], v[1:4], v[4:7], v[7:10], v[10:13]

    def index(block: list[int]) -> list[int]:
        bh, mm, _ = block
        return [bh // h * h + mm, bh % h, 0]

    assert h >= 1 and a != b
    assert all(0 <= x < g for blk in (a, b) for x, g in zip(blk, grid, strict=True))
    assert index(a) == index(b) == tile
    assert all(0 <= t < g for t, g in zip(tile, grid, strict=True))
