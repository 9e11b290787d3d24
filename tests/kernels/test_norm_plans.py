"""The row-reduction examples (softmax, RMSNorm, LayerNorm) with the tiles and hints their
`plan()` picks for each row length: rows that are not a tile multiple and columns that are
not a power of two, every element checked against a float64 reference by the example's
own `check`. On the GPU this runs the tuned variants (occupancy, 8-16 worker warps, 2-block
clusters, the looped kernel past 32k columns); on the interpreter the same plans' tiles."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_examples import load

from cutile.core import bf16, f32

DTYPES = [(f32, np.float32), (bf16, ml_dtypes.bfloat16)]
# (rows, columns): short rows several to a block, then 4k, 16k and 32k padded rows, one
# past the one-pass limit (the looped kernel), and a short row of 100 (BM scaled up)
SHAPES = [(37, 1000), (9, 3000), (3, 12000), (2, 30000), (2, 40000), (70, 100)]


def inputs(rng: np.random.Generator, m: int, n: int, host: Any) -> tuple[np.ndarray, ...]:
    xs = (rng.standard_normal((m, n)) * 2 + 1).astype(host)
    ws = rng.uniform(0.5, 1.5, n).astype(host)
    bs = rng.standard_normal(n).astype(host)
    return xs, ws, bs


def check(op: str, mod: Any, xs: np.ndarray, ws: np.ndarray, bs: np.ndarray, dt: Any,
          p: Any) -> None:
    """The example's own check of plan p on these inputs (each op takes what it reads)."""
    if op == "softmax":
        mod.check(xs, dt, p)
    elif op == "rmsnorm":
        mod.check(xs, ws, dt, p)
    else:
        mod.check(xs, ws, bs, dt, p)


@pytest.mark.parametrize(("m", "n"), SHAPES)
@pytest.mark.parametrize("op", ["softmax", "rmsnorm", "layernorm"])
def test_plan_is_correct_on_ragged_rows(op: str, m: int, n: int) -> None:
    mod = load(op)
    rng = np.random.default_rng(n + m)
    for dt, host in DTYPES:
        p = mod.plan(n, dt)
        assert p.BN >= n and (p.BK is None) == (p.BN <= mod.MAX_ROW)
        check(op, mod, *inputs(rng, m, n, host), dt, p)


@pytest.mark.parametrize("op", ["softmax", "rmsnorm", "layernorm"])
def test_plan_keeps_the_tile_size_for_short_rows(op: str) -> None:
    mod = load(op)
    for dt, _ in DTYPES:
        base = mod.plan(1024, dt)
        short = mod.plan(100, dt)        # BN 128: eight times the rows, the same hints
        assert (short.BN, short.BM * short.BN) == (128, base.BM * base.BN)
        assert short.hints == base.hints
        long = mod.plan(40000, dt)       # past MAX_ROW: column tiles, one row per block
        assert long.BK is not None and long.BM == 1 and long.BN == 65536


# LayerNorm's "shifted" variant (one round of reductions): several rows a block, ragged
# rows and columns, and means far from zero, where an unshifted E[x^2] - E[x]^2 in f32
# would lose the variance (mean 1000, deviation 2: sums of x^2 ~ 1e10 err past it)
SHIFTED = [(37, 1000, 4, 0.0), (9, 3000, 1, 5.0), (5, 100, 8, -300.0), (3, 12000, 2, 1000.0),
           (2, 30000, 1, 50.0)]


@pytest.mark.parametrize(("m", "n", "bm", "mean"), SHIFTED)
def test_layernorm_shifted_variant_is_correct(m: int, n: int, bm: int, mean: float) -> None:
    mod = load("layernorm")   # puts examples/ (and its row_kernels package) on the path
    from row_kernels.plans import Plan, next_pow2

    rng = np.random.default_rng(m * n + bm)
    for dt, host in DTYPES:
        p = Plan(bm, next_pow2(n), None, False, False, (), mod.KERNELS, "shifted")
        assert p.kernel(dt).name == mod.KERNELS[(dt, "shifted")].name == "layernorm_shifted"
        xs, ws, bs = inputs(rng, m, n, host)
        xs = (xs.astype(np.float64) + mean).astype(host)
        mod.check(xs, ws, bs, dt, p)


def test_row_plans_may_name_a_variant() -> None:
    """A ROW_PLANS entry with a fifth element runs that one-pass variant (with the entry's
    tiles and hints); one without it runs the example's own one-pass kernel."""
    mod = load("layernorm")
    from row_kernels.plans import plan_rows

    plans = {(1024, 2): (4, False, False, {"occupancy": 4}, "shifted"),
             (4096, 2): (1, False, True, {"num_worker_warps": 8})}
    short = plan_rows(1000, bf16, mod.KERNELS, plans, 4096)
    assert (short.variant, short.BM, short.hints) == ("shifted", 4, (("occupancy", 4),))
    assert short.kernel(bf16).name == mod.KERNELS[(bf16, "shifted")].name
    longer = plan_rows(3000, bf16, mod.KERNELS, plans, 4096)
    assert longer.variant == "" and longer.kernel(bf16).name == mod.KERNELS[(bf16, False)].name


# The gather variants (the row read by a `gather`, examples/row_kernels/loads.py): ragged
# rows (a column count that is not a multiple of 16 too), a row count that is not a
# multiple of BM, several rows a block, and the weights through TMA or not
GATHERED = [("softmax", "gather", 37, 1000, 4, False), ("softmax", "gather", 5, 3001, 1, False),
            ("rmsnorm", "gather", 37, 1000, 2, False), ("rmsnorm", "gather", 9, 3000, 1, True),
            ("rmsnorm", "gather", 3, 12007, 1, False),
            ("layernorm", "gather", 37, 1000, 4, False), ("layernorm", "gather", 9, 3000, 1, True),
            ("layernorm", "gather_shifted", 11, 1000, 2, False),
            ("layernorm", "gather_shifted", 2, 30000, 1, False),
            # the SASS round's variants (benchmarks/norms.py SASS_CONFIGS): the weights by
            # gathers, softmax's FFMA before exp2, and BM rows a block one after another
            # (a row count that leaves the last block short: rows past M are padding)
            ("rmsnorm", "gather_w", 37, 1000, 2, False),
            ("rmsnorm", "gather_w", 3, 12007, 1, False),
            ("layernorm", "gather_w_shifted", 11, 1000, 2, False),
            ("layernorm", "gather_w_shifted", 5, 3001, 1, False),
            ("softmax", "gather_fma", 37, 1000, 4, False),
            ("softmax", "gather_fma", 5, 3001, 1, False),
            ("softmax", "rows", 37, 1000, 4, False), ("softmax", "rows", 9, 3000, 2, False),
            ("softmax", "rows", 70, 100, 16, False),
            ("rmsnorm", "rows", 37, 1000, 8, False), ("rmsnorm", "rows", 5, 3001, 2, False),
            ("layernorm", "rows", 37, 1000, 4, False), ("layernorm", "rows", 3, 12000, 2, False),
            # fused multiply-adds (benchmarks/norms.py FFMA_CONFIGS): the squares summed as
            # fma(lo, lo, hi * hi) of the row's halves, LayerNorm's output by an fma; a row
            # shorter than half the tile (hi all padding) too
            ("rmsnorm", "gather_ffma", 37, 1000, 2, False),
            ("rmsnorm", "gather_ffma", 9, 3000, 1, True),
            ("rmsnorm", "gather_ffma", 4, 1500, 1, False),
            ("rmsnorm", "rows_ffma", 37, 1000, 8, False),
            ("rmsnorm", "rows_ffma", 5, 3001, 2, False),
            ("layernorm", "gather_ffma", 11, 1000, 2, False),
            ("layernorm", "gather_ffma", 5, 3001, 1, False),
            ("layernorm", "gather_ffma", 4, 1500, 1, False),
            ("layernorm", "gather_w_ffma", 11, 1000, 2, False),
            ("layernorm", "gather_w_ffma", 5, 3001, 1, False),
            ("layernorm", "gather_w_ffma", 3, 12000, 1, False)]


@pytest.mark.parametrize(("op", "variant", "m", "n", "bm", "tma"), GATHERED)
def test_gather_variants_are_correct_on_ragged_rows(op: str, variant: str, m: int, n: int,
                                                    bm: int, tma: bool) -> None:
    mod = load(op)
    from row_kernels.plans import Plan, next_pow2

    rng = np.random.default_rng(m * n + bm)
    for dt, host in DTYPES:
        p = Plan(bm, next_pow2(n), None, tma, False, (), mod.KERNELS, variant)
        assert p.kernel(dt).name == mod.KERNELS[(dt, variant)].name
        xs, ws, bs = inputs(rng, m, n, host)
        if op == "layernorm":
            xs = (xs.astype(np.float64) + 5.0).astype(host)   # a mean away from zero
        check(op, mod, xs, ws, bs, dt, p)


@pytest.mark.parametrize("op", ["softmax", "rmsnorm", "layernorm"])
def test_the_benchmark_times_each_plan_as_the_example_runs_it(op: str) -> None:
    """benchmarks/norms.py's first config of every case is the example's own plan: the same
    hints and, where a ROW_PLANS entry asks for it, `fp_contract` (a flag of the config,
    not a hint it would label or pass twice)."""
    import importlib
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    bench = importlib.import_module("norms")
    mod = load(op)
    for dtype, dt in (("bf16", bf16), ("f32", f32)):
        for n in (1024, 4096, 16384, 32768, 65536):
            cfg = bench.plan_config(op, dtype, n)
            want = mod.plan(n, dt).kernel(dt)
            got = bench.kernel_for(op, dtype, cfg)
            assert "fp_contract" not in cfg.label().split("=")[0]
            assert got.fp_contract == want.fp_contract == cfg.contract
            assert got.hint_args == want.hint_args
    assert op == "softmax" or any(bench.plan_config(op, "bf16", n).contract
                                  for n in (1024, 4096))
