"""Programmatic dependent launch on the GPU (docs/pdl.md): chains of 200 dependent PDL
kernels, each reading the neighbouring tile of what the one before wrote, over 4 MiB
buffers (thousands of blocks, so a kernel that started its accesses before its
predecessor finished would read stale tiles), on one stream, in a `cutile.graph`, and
through the Python launch path; exact against numpy. Each kernel's launch follows the
compiled kernel: only kernels with the PDL prologue are launched with the attribute."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))

import pdl_kernels as pk

import cutile
from cutile import api
from cutile.core import f32

pytestmark = pytest.mark.gpu

N = 1 << 20
STEPS = 200


def _inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)


@pytest.mark.parametrize(("plain_every", "first_every"), [(0, 0), (7, 0), (0, 1), (5, 2)])
def test_200_dependent_pdl_kernels_on_a_stream(plain_every: int, first_every: int) -> None:
    """Back to back on one stream (a `then` chain), PDL kernels only, or every 7th kernel
    without PDL (a PDL kernel after a plain one, and the reverse); kernels that trigger
    their dependents before their wait (`pdl_trigger_first`: all of them, so the whole
    chain may cascade onto the GPU, or every other one)."""
    a0, y0 = _inputs(1)
    got = pk.run_chain(a0, y0, STEPS, plain_every, first_every)
    want = pk.reference(a0, y0, STEPS)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("first_every", [0, 2])
def test_200_dependent_pdl_kernels_in_a_graph(first_every: int) -> None:
    a0, y0 = _inputs(2)
    a, b, y = api.from_numpy(a0), api.zeros([N], f32), api.from_numpy(y0)
    g = cutile.graph(pk.chain_in_graph, a, b, y, STEPS, 0, first_every)
    assert g.num_launches == STEPS
    for _ in range(3):
        g.replay()
    g.wait()
    want = pk.reference(a0, y0, 3 * STEPS)
    np.testing.assert_array_equal(g.read(0), want[0])
    np.testing.assert_array_equal(g.read(1), want[1])
    g.into_inner()


def test_the_launch_follows_the_compiled_kernel() -> None:
    from cutile.runtime.binding import specialization

    a, b, y = api.from_numpy(np.ones(N, np.float32)), api.zeros([N], f32), api.zeros([N], f32)
    op = pk.shift_step(b.partition([pk.B]), a, y)
    spec = specialization(*op.specialization)
    op.sync()
    assert pk.shift_step._runnable(spec).pdl is True
    assert pk.shift_step_plain._runnable(spec).pdl is False


def _raw_launch(kernel: Any, op: Any) -> Any:
    """The Python launch path (`LoadedKernel.launch`: autotuning, raw replays) of a bound
    op, whose arguments' addresses are fixed."""
    from cutile.kernel import op_binding
    from cutile.runtime import driver
    from cutile.runtime.launch import flatten_args

    bnd = op_binding(op)
    loaded = kernel._runnable(bnd.spec)
    flat = flatten_args(loaded.abi, [p.name for p in bnd.params], bnd.values)
    grid, stream = tuple(bnd.grid), driver.state().stream
    return loaded, lambda: loaded.launch(grid, flat, stream)


def test_200_dependent_pdl_kernels_through_the_python_launch_path() -> None:
    from cuda.bindings import driver as cu

    from cutile.runtime import driver

    a0, y0 = _inputs(3)
    a, b, y = api.from_numpy(a0), api.zeros([N], f32), api.from_numpy(y0)
    forward = pk.shift_step(b.partition([pk.B]), a, y)
    loaded, run_forward = _raw_launch(pk.shift_step, forward)
    assert loaded.pdl
    zb, a, y = forward.sync()
    backward = pk.shift_step(a.partition([pk.B]), zb.unpartition(), y)
    _, run_backward = _raw_launch(pk.shift_step, backward)
    za, b, y = backward.sync()                        # two steps through the safe path
    cutile.synchronize()
    for _ in range((STEPS - 2) // 2):                  # the rest launched raw, back to back
        run_forward()
        run_backward()
    assert cu.cuStreamSynchronize(driver.state().stream)[0] == cu.CUresult.CUDA_SUCCESS
    want = pk.reference(a0, y0, STEPS)
    np.testing.assert_array_equal(za.unpartition().to_numpy(), want[0])
    np.testing.assert_array_equal(b.to_numpy(), want[1])
