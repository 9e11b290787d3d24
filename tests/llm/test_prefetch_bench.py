"""`benchmarks/llm_prefetch.py`: its touch kernels read exactly the weight tiles they name
(numerics against numpy on the interpreter), and it finds one fork point per layer in the
names a decode step launches (the graph and the timing need the GPU)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from llm.model import Engine
from llm.plan import plan_for

from cutile import api
from cutile.core import f32

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

BR, BC = 32, 512


@pytest.fixture
def weight() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((8 * BR, 2 * BC)).astype(ml_dtypes.bfloat16)


def tile_sums(w: np.ndarray) -> np.ndarray:
    """Sum of each (BR, BC) tile, by tile row and column, in float64."""
    r, c = w.shape[0] // BR, w.shape[1] // BC
    return w.astype(np.float64).reshape(r, BR, c, BC).sum(axis=(1, 3))


def test_a_touch_keeps_the_sum_of_each_tile_it_reads(weight: np.ndarray) -> None:
    pytest.importorskip("cuda.bindings")
    import llm_prefetch as lp

    out = api.zeros([3, 2], f32).partition([1, 1])
    out, *_ = lp.l2_touch(out, api.from_numpy(weight), 2, BR=BR, BC=BC).sync()
    np.testing.assert_allclose(out.unpartition().to_numpy(), tile_sums(weight)[2:5],
                               rtol=1e-4, atol=1e-2)


def test_a_paired_touch_reads_both_row_ranges(weight: np.ndarray) -> None:
    pytest.importorskip("cuda.bindings")
    import llm_prefetch as lp

    out = api.zeros([2, 2], f32).partition([1, 1])
    out, *_ = lp.l2_touch_pair(out, api.from_numpy(weight), 0, 5, BR=BR, BC=BC).sync()
    sums = tile_sums(weight)
    np.testing.assert_allclose(out.unpartition().to_numpy(), sums[0:2] + sums[5:7],
                               rtol=1e-4, atol=1e-2)


def test_a_looping_touch_walks_its_rows_with_the_grid_as_stride(weight: np.ndarray) -> None:
    pytest.importorskip("cuda.bindings")
    import llm_prefetch as lp

    out = api.zeros([2, BC], f32).partition([1, BC])
    # 3 tile rows from tile row 1 (and from 4): block 0 takes rows 0 and 2, block 1 row 1
    out, *_ = lp.l2_touch_loop(out, api.from_numpy(weight), 1, 4, 3, BR=BR, BC=BC).sync()
    cols = weight.astype(np.float64).reshape(8, BR, 2, BC).sum(axis=(1, 2))  # [row tile, BC]
    want = np.stack([cols[[1, 3, 4, 6]].sum(axis=0), cols[[2, 5]].sum(axis=0)])
    np.testing.assert_allclose(out.unpartition().to_numpy(), want, rtol=1e-4, atol=1e-2)


def test_the_fork_points_are_one_qkv_gemv_a_layer(tiny: Any, tiny_weights: Any) -> None:
    pytest.importorskip("cuda.bindings")
    import llm_prefetch as lp
    import llm_tools as lt

    eng = Engine(tiny_weights, 40, plan_for(tiny))
    eng.load_prompt([3, 1, 4])
    names: list[str] = []
    eng.observer = lambda kernel, op: names.append(kernel.name)
    eng.decode_step()
    launches = [lt.Launch(n, (1, 1, 1), None, 0) for n in names]
    starts = lp.layer_starts(launches)
    assert len(starts) == tiny.num_layers
    assert all(names[i].startswith("gemv_norm_partial") for i in starts)
