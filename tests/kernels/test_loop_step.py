"""A `range` step known only at run time. Tile IR's `for` with a step of 0 or less is
undefined behaviour (the loop never ends, or walks its variable below the start), so the
step must be at least 1 as the loop runs it: the `i32` value, an `i64` step truncated. The
checker owns that goal (obligation `loop-step-positive`, on the `range` call): static where
it follows from the block ids and loop ranges, at launch where the step is launch-known,
else a device check before the loop, which `deny_in_kernel_checks` refuses (CT2008). The
lowering emits exactly the check the checker named, and no other.

Every launch here runs on the interpreter under the race and bounds detector, but for the
`gpu` tests at the end, which ask the H200 what a loop counter near 2^31 does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Mut, Tensor, block_id, f32, full, i32, i64, zeros
from cutile.errors import InterpreterError, KernelCheckError

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _interpreted(request: pytest.FixtureRequest) -> None:
    """On the interpreter, whose detector sees every access (conftest.py); the `gpu`
    tests on the GPU."""
    if "gpu" not in request.keywords:
        request.getfixturevalue("interpreter")


@cutile.entry
def strided_sum(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32, s: i32):
    acc = zeros((16,), f32)
    for i in range(0, n, s):
        acc += x.load_tile((16,), (i,))
    z.store(acc)


@cutile.entry
def strided_sum_i64(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32, s: i64):
    acc = zeros((16,), f32)
    for i in range(0, n, s):
        acc += x.load_tile((16,), (i,))
    z.store(acc)


@cutile.entry
def shrinking_steps(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32, s: i32):
    # the step changes round the `while`: no launch can know it before the inner loop
    acc = zeros((16,), f32)
    t = s
    k = 0
    while k < 2:
        for i in range(0, n, t):
            acc += x.load_tile((16,), (i,))
        t = t - 1
        k += 1
    z.store(acc)


@cutile.entry
def per_block_step(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32):
    acc = zeros((16,), f32)
    for i in range(0, n, block_id(0) + 1):
        acc += x.load_tile((16,), (i,))
    z.store(acc)


def _tiles(n: int) -> tuple[np.ndarray, Any]:
    data = rng.standard_normal(16 * n).astype(np.float32)
    return data, api.from_numpy(data)


def _discharge(kernel: Any) -> str:
    (o,) = [o for o in kernel.check_report() if o.kind == "loop-step-positive"]
    return str(o.discharged)


def _ops(kernel: Any) -> list[str]:
    module = kernel.lowered(kernel.specialization({})).module
    return [op.name for f in module.functions for op in f.body.walk()]


def _expected(data: np.ndarray, rows: list[int]) -> np.ndarray:
    return data.astype(np.float64).reshape(-1, 16)[rows].sum(axis=0)


@pytest.mark.parametrize("step", [1, 2, 3, 8])
def test_a_scalar_step_is_checked_at_launch(step: int) -> None:
    assert _discharge(strided_sum) == "launch"
    assert "assert" not in _ops(strided_sum)      # no device check: the launch decided
    data, x = _tiles(8)
    with cutile.check_races():
        z = strided_sum(api.zeros([16], f32).partition([16]), x, 8, step).sync()[0]
    np.testing.assert_allclose(z.unpartition().to_numpy(),
                               _expected(data, list(range(0, 8, step))), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("step", [0, -1, -2**31])
def test_a_step_below_one_is_refused_at_launch(step: int) -> None:
    _, x = _tiles(8)
    with pytest.raises(cutile.LaunchError) as info:
        strided_sum(api.zeros([16], f32).partition([16]), x, 8, step)
    assert info.value.code == "CT6200"
    assert "the step of `range(0, n, s)` is positive" in str(info.value)
    assert f"s = {step}" in str(info.value)


@pytest.mark.parametrize("step", [2**32, 2**32 + 1, -2**31 - 1])
def test_an_i64_step_must_fit_the_counter(step: int) -> None:
    # 2**32 runs as the i32 step 0: refused like a loop bound that does not fit
    _, x = _tiles(8)
    with pytest.raises(cutile.LaunchError) as info:
        strided_sum_i64(api.zeros([16], f32).partition([16]), x, 8, step)
    assert info.value.code == "CT6200"
    data, x = _tiles(8)
    with cutile.check_races():
        z = strided_sum_i64(api.zeros([16], f32).partition([16]), x, 8, 3).sync()[0]
    np.testing.assert_allclose(z.unpartition().to_numpy(), _expected(data, [0, 3, 6]),
                               rtol=1e-5, atol=1e-5)


def test_a_step_known_only_on_the_device_is_checked_there() -> None:
    assert _discharge(shrinking_steps) == "device"
    assert "assert" in _ops(shrinking_steps)
    data, x = _tiles(8)
    with cutile.check_races():
        z = shrinking_steps(api.zeros([16], f32).partition([16]), x, 8, 3).sync()[0]
    rows = list(range(0, 8, 3)) + list(range(0, 8, 2))
    np.testing.assert_allclose(z.unpartition().to_numpy(), _expected(data, rows),
                               rtol=1e-5, atol=1e-5)
    with cutile.check_races(), pytest.raises(InterpreterError) as info:
        shrinking_steps(api.zeros([16], f32).partition([16]), x, 8, 1).sync()
    assert info.value.code == "CT6910"              # the second round's step is 0
    assert "range() step must be positive" in info.value.message


def test_a_step_positive_for_every_block_needs_no_check() -> None:
    assert _discharge(per_block_step) == "static"
    assert "assert" not in _ops(per_block_step)
    data, x = _tiles(8)
    with cutile.check_races():
        z = per_block_step(api.zeros([16], f32).partition([16]), x, 8).sync()[0]
    np.testing.assert_allclose(z.unpartition().to_numpy(), _expected(data, list(range(8))),
                               rtol=1e-5, atol=1e-5)


def test_deny_in_kernel_checks_allows_the_launch_check_and_refuses_the_device_one() -> None:
    @cutile.entry(deny_in_kernel_checks=True)
    def launch_known(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32, s: i32):
        acc = zeros((16,), f32)
        for i in range(0, n, s):
            acc += x.load_tile((16,), (i,))
        z.store(acc)

    launch_known.check()

    @cutile.entry(deny_in_kernel_checks=True)
    def carried(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32, s: i32):
        acc = zeros((16,), f32)
        t = s
        while t > 0:
            for i in range(0, n, t):
                acc += x.load_tile((16,), (i,))
            t = t - 1
        z.store(acc)

    with pytest.raises(KernelCheckError) as info:
        carried.check()
    assert info.value.codes == ["CT2008"]
    assert "the step of `range(0, n, t)` is positive" in str(info.value)
    assert "`t > 0`" in str(info.value)



@cutile.entry
def count_iterations(z: Mut[Tensor[i32, [16]]], lo: i32, hi: i32, s: i32):
    c = 0
    low = 0
    for j in range(lo, hi, s):
        c += 1
        low = min(low, j)
    z.store(full((16,), c * 1000 + (low < 0), i32))


@cutile.entry
def count_iterations_constant_step(z: Mut[Tensor[i32, [16]]], lo: i32, hi: i32):
    c = 0
    low = 0
    for j in range(lo, hi, 1073741825):
        c += 1
        low = min(low, j)
    z.store(full((16,), c * 1000 + (low < 0), i32))


# One iteration. A 32-bit counter stepped naively wraps 2^31 - 17 + (2^30 + 1) to a
# negative value below `hi`: on the H200 (tileiras 13.5) such a loop ran four times, its
# variable below 0, until the lowering counted it in 64 bits; the interpreter reports a
# counter that would wrap as a fault.
TOP = (2**31 - 17, 2**31 - 16)


def _count(kernel: Any, *args: int) -> int:
    z = api.zeros([16], i32).partition([16])
    return int(kernel(z, *args).sync()[0].unpartition().to_numpy()[0])


def test_the_counter_runs_over_the_range_without_wrapping() -> None:
    with cutile.check_races():
        assert _count(count_iterations, *TOP, 2**30 + 1) == 1000
        assert _count(count_iterations_constant_step, *TOP) == 1000


@pytest.mark.gpu
def test_the_h200_counter_runs_over_the_range_without_wrapping() -> None:
    assert _count(count_iterations, *TOP, 2**30 + 1) == 1000
    assert _count(count_iterations_constant_step, *TOP) == 1000
