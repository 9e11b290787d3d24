"""Kernel factories: a module-level or closure flag folds into the kernel (`if causal:`),
and the checker, like the lowering, reads only the branch that runs. A racy store in the
branch that is folded away is never emitted (accepted); in the branch that runs it is
rejected. A loop bounded by `min(count, m + 1)` is proved through the `min`, and causal
attention's tail with unequal tiles through `(m * BM) // BN` (the first row of the block's
own tile fits 32 bits)."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, cdiv, f32, zeros


def make(racy_branch_taken: bool) -> cutile.EntryKernel:
    @cutile.entry
    def flagged(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
        if racy_branch_taken:
            z.store(zeros((B,), f32), index=(block_id(0) // 2,))   # two blocks, one tile
        else:
            z.store(zeros((B,), f32) + 1.0)

    return flagged


def test_the_folded_away_branch_is_neither_checked_nor_run() -> None:
    k = make(False)
    k.check()
    (z,) = k(api.full([256], np.nan, f32).partition([64])).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.ones(256, np.float32))


def test_the_branch_that_runs_is_checked() -> None:
    with pytest.raises(cutile.KernelCheckError) as info:
        make(True).check()
    assert "CT2001" in info.value.codes


def make_prefix(causal: bool) -> cutile.EntryKernel:
    @cutile.entry
    def prefix(z: Mut[Tensor[f32, [1, "B"]]], x: Tensor[f32, [-1, -1]], B: Const[int]):
        m = block_id(0)
        stop = cdiv(x.shape[0], 1)
        if causal:
            stop = min(stop, m + 1)
        acc = zeros((1, B), f32)
        for j in range(stop):
            acc = acc + x.load_tile((1, B), (j, 0))
        z.store(acc)

    return prefix


@pytest.mark.parametrize("causal", [False, True])
def test_a_loop_bounded_by_a_min_needs_no_device_check(causal: bool) -> None:
    k = make_prefix(causal)
    assert not [o for o in k.check_report() if o.discharged == "device"], k.check_report()
    xs = np.random.default_rng(4).standard_normal((6, 32)).astype(np.float32)
    z = api.zeros([6, 32], f32).partition([1, 32])
    z, _ = k(z, api.from_numpy(xs)).sync()
    want = np.cumsum(xs, axis=0) if causal else np.broadcast_to(xs.sum(axis=0), xs.shape)
    np.testing.assert_allclose(z.unpartition().to_numpy(), want, rtol=1e-5, atol=1e-5)


@cutile.entry
def diagonal_tail(z: Mut[Tensor[f32, ["BM", "B"]]], x: Tensor[f32, [-1, "B"]], BM: Const[int],
                  BN: Const[int], B: Const[int]):
    """Causal attention's masked tail with query tiles of BM rows and key tiles of BN:
    `range(min(n // BN, (m * BM) // BN), min(cdiv(n, BN), cdiv((m + 1) * BM, BN)))`. The
    start is bounded below through the quotient (`(m * BM) // BN >= 0`, `m * BM` being the
    first row of the block's own tile, which fits 32 bits); the end through the `min`,
    whatever `(m + 1) * BM` wraps to."""
    m = block_id(0)
    n = x.shape[0]
    start = min(n // BN, (m * BM) // BN)
    stop = min(cdiv(n, BN), cdiv((m + 1) * BM, BN))
    acc = zeros((1, B), f32)
    for j in range(start, stop):
        acc = acc + x.load_tile((BN, B), (j, 0)).sum(axis=0, keepdims=True)
    z.store(zeros((BM, B), f32) + acc)


@cutile.entry
def diagonal_tail_past_the_end(z: Mut[Tensor[f32, ["BM", "B"]]], x: Tensor[f32, [-1, "B"]],
                               BM: Const[int], BN: Const[int], B: Const[int]):
    """The same, one key tile past the count: not proved (a device check)."""
    m = block_id(0)
    n = x.shape[0]
    start = min(n // BN, (m * BM) // BN)
    stop = min(cdiv(n, BN), cdiv((m + 1) * BM, BN)) + 1
    acc = zeros((1, B), f32)
    for j in range(start, stop):
        acc = acc + x.load_tile((BN, B), (j, 0)).sum(axis=0, keepdims=True)
    z.store(zeros((BM, B), f32) + acc)


def test_a_causal_tail_with_unequal_tiles_needs_no_device_check() -> None:
    k = diagonal_tail
    assert not [o for o in k.check_report() if o.discharged == "device"], k.check_report()
    xs = np.random.default_rng(5).standard_normal((100, 16)).astype(np.float32)
    z = api.zeros([100, 16], f32).partition([32, 16])
    z, _ = k(z, api.from_numpy(xs), BN=8).sync()
    out = z.unpartition().to_numpy()
    for m in range(4):  # the key tiles from row m*32's tile to the one holding row m*32+31
        lo, hi = min(100 // 8, m * 32 // 8), min(-(-100 // 8), -(-(m + 1) * 32 // 8))
        want = xs[lo * 8:hi * 8].sum(axis=0)
        rows = min(32, 100 - m * 32)
        np.testing.assert_allclose(out[m * 32:m * 32 + rows],
                                   np.broadcast_to(want, (rows, 16)), rtol=1e-5, atol=1e-5)


def test_a_causal_tail_one_past_the_count_is_not_proved() -> None:
    device = [o for o in diagonal_tail_past_the_end.check_report() if o.discharged == "device"]
    assert device and all(o.kind == "bounds" for o in device)
