"""The candidate attention kernels of the SASS round (issue 8; `make_attention(...,
pipelined=, lazy_rescale=, select_mask=)`, timed by `benchmarks/attention.py --candidates`) compute
softmax(Q K^T / sqrt(d)) V against a float64 reference on the interpreter: causal or not,
with and without a ragged last key tile, tiles of equal and unequal sizes. The lazy
rescale is also checked on keys whose scores grow from tile to tile, so that both of its
branches run: some rows' maxima grow by more than 2^8 after the first tile (rescaled),
others by less (kept stale while the block does not rescale)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from kernel_source import load_example

from cutile import api

ex = load_example("attention", "example_attention_candidates")

VARIANTS = [{"pipelined": True}, {"lazy_rescale": True},
            {"pipelined": True, "lazy_rescale": True}, {"select_mask": True},
            {"select_mask": True, "lazy_rescale": True}]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "+".join(v))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("seq", "tiles"), [(64, (32, 16)), (72, (32, 16)), (72, (16, 32)),
                                            (64, (32, 32))])
def test_candidates_match_the_reference(variant: dict[str, bool], causal: bool, seq: int,
                                        tiles: tuple[int, int]) -> None:
    kernel = ex.make_attention(causal, even_keys=seq % tiles[1] == 0, **variant)
    assert ex.run(2, seq, 16, causal, tiles, kernel=kernel) < 3e-2


def growing_inputs(bh: int, seq: int, d: int, bn: int) -> tuple[np.ndarray, ...]:
    """Random q, k, v whose keys grow tile by tile (k of tile j scaled by 1 + 1.5 j), so the
    row maxima of the scores climb across the key loop."""
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((bh, seq, d)) for _ in range(3))
    k = k * (1.0 + 1.5 * (np.arange(seq) // bn))[None, :, None]
    return tuple(a.astype(ml_dtypes.bfloat16) for a in (q, k, v))


def max_growth_per_tile(q: np.ndarray, k: np.ndarray, bn: int) -> np.ndarray:
    """How much each row's running maximum (base 2, scaled) grows at each key tile after
    the first: what the lazy step compares against its threshold."""
    s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1)
    s *= math.log2(math.e) / math.sqrt(q.shape[-1])
    tiles = s.reshape(*s.shape[:2], -1, bn).max(axis=-1)        # (bh, seq, n_tiles)
    running = np.maximum.accumulate(tiles, axis=-1)
    return np.diff(running, axis=-1)


@pytest.mark.parametrize("pipelined", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_lazy_rescale_takes_both_branches_and_stays_exact(pipelined: bool,
                                                          causal: bool) -> None:
    bh, seq, d, bm, bn = 2, 96, 16, 32, 16
    q, k, v = growing_inputs(bh, seq, d, bn)
    growth = max_growth_per_tile(q, k, bn)             # (bh, seq, tiles - 1)
    per_block = growth.reshape(bh, seq // bm, bm, -1).max(axis=2)
    # some blocks rescale after their first tile (the branch), some rows grow without it
    assert (per_block > ex.RESCALE_THRESHOLD).any()
    assert ((growth > 0) & (growth <= ex.RESCALE_THRESHOLD)).any()
    kernel = ex.make_attention(causal, even_keys=True, pipelined=pipelined,
                               lazy_rescale=True)
    o, *_ = kernel(ex.output(bh, seq, d, bm), api.from_numpy(q), api.from_numpy(k),
                   api.from_numpy(v), 1.0 / math.sqrt(d), BN=bn).sync()
    out = ex.result(o).to_numpy().astype(np.float64)
    ref = ex.reference(q, k, v, causal)
    assert np.isfinite(out).all()
    # relative to the largest output: the grown keys make the softmax sharp
    assert np.abs(out - ref).max() < 3e-2 * max(1.0, float(np.abs(ref).max()))


def test_lazy_step_keeps_a_stale_maximum_below_the_threshold() -> None:
    """The point of the lazy step: on inputs whose maxima grow by less than 2^8 after the
    first tile, it keeps the first tile's maximum; so the sum it carries is that of
    exponentials offset by the stale max (values above 1), and still the same result."""
    bh, seq, d, bn = 1, 64, 16, 16
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((bh, seq, d)).astype(ml_dtypes.bfloat16) for _ in range(3))
    growth = max_growth_per_tile(q, k, bn)
    assert (growth <= ex.RESCALE_THRESHOLD).all() and (growth > 0).any()
    kernel = ex.make_attention(False, even_keys=True, lazy_rescale=True)
    o, *_ = kernel(ex.output(bh, seq, d, 32), api.from_numpy(q), api.from_numpy(k),
                   api.from_numpy(v), 1.0 / math.sqrt(d), BN=bn).sync()
    out = ex.result(o).to_numpy().astype(np.float64)
    assert np.abs(out - ex.reference(q, k, v, False)).max() < 3e-2


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "+".join(v))
@pytest.mark.parametrize("causal", [False, True])
def test_candidates_need_no_device_check(variant: dict[str, bool], causal: bool) -> None:
    for even in (False, True):
        report = ex.make_attention(causal, even_keys=even, **variant).check_report()
        assert report and all(o.discharged in ("static", "launch") for o in report), report
