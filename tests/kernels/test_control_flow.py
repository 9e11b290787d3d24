"""Control flow in kernels: `while` loops, `break` and `continue` in `for` and `while`, early
`return` in device functions (and a bare one in entries), and device `print`.

Every kernel runs on the active backend (the CPU interpreter under the race and bounds
detector when there is no GPU) against a numpy model, and assembles for sm_90 with
tileiras; the kernels the checker must refuse are refused with their codes."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    block_id,
    f32,
    full,
    i32,
    load_tile_like,
    maximum,
    num_blocks,
    num_tiles,
    zeros,
)
from cutile.runtime import driver

rng = np.random.default_rng(2027)


def tiles_of(xs: np.ndarray, b: int) -> list[np.ndarray]:
    """`xs` cut into tiles of `b`, the last one padded with zeros (as the loads pad)."""
    out = []
    for i in range(0, len(xs), b):
        t = np.zeros(b, xs.dtype)
        seg = xs[i:i + b]
        t[:len(seg)] = seg
        out.append(t)
    return out


# ----------------------------------------------------------------------------- while


@cutile.entry
def newton_sqrt(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    a = load_tile_like(x, z)
    y = maximum(a, 1.0)
    err = 1.0
    steps = 0
    while err > 1e-6 and steps < 60:  # until the whole tile has converged
        y2 = 0.5 * (y + a / y)
        err = (abs(y2 - y) / maximum(y2, 1e-20)).max()
        y = y2
        steps += 1
    z.store(y)


def test_while_iterates_until_each_tile_converges() -> None:
    xs = rng.uniform(0.01, 1e4, 1000).astype(np.float32)
    z = api.zeros([1000], f32).partition([128])
    z, _ = newton_sqrt(z, api.from_numpy(xs)).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), np.sqrt(xs), rtol=2e-6)


@cutile.entry
def halve_n_times(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], n: i32, B: Const[int]):
    t = load_tile_like(x, z)
    i = 0
    while i < n:  # a trip count known only at launch
        t = t * 0.5
        i += 1
    z.store(t)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_while_trip_count_comes_from_a_scalar(n: int) -> None:
    xs = rng.standard_normal(300).astype(np.float32)
    z = api.zeros([300], f32).partition([128])
    z, _, _ = halve_n_times(z, api.from_numpy(xs), n).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs * np.float32(0.5**n))


@cutile.entry
def while_false(z: Mut[Tensor[f32, ["B"]]], B: Const[int], N: Const[int]):
    t = zeros((B,), f32)
    while N > 3:  # folded: the body is not compiled for N <= 3
        t = t + 1.0
        break
    z.store(t)


@pytest.mark.parametrize(("n", "value"), [(2, 0.0), (5, 1.0)])
def test_a_folded_while_condition(n: int, value: float) -> None:
    z = api.zeros([64], f32).partition([64])
    (z,) = while_false(z, N=n).sync()
    assert (z.unpartition().to_numpy() == value).all()


# ----------------------------------------------------------------------------- break / continue


@cutile.entry
def double_until(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, z)
    for _ in range(20):
        if t.sum() > 100.0:  # a condition on a reduced value
            break
        t = t * 2.0
    z.store(t)


def test_for_breaks_on_a_reduced_value() -> None:
    xs = rng.uniform(-1, 2, 300).astype(np.float32)
    z = api.zeros([300], f32).partition([128])
    z, _ = double_until(z, api.from_numpy(xs)).sync()
    ref = []
    for t in tiles_of(xs, 128):
        for _ in range(20):
            if t.sum() > 100.0:
                break
            t = t * np.float32(2)
        ref.append(t)
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.concatenate(ref)[:300])


@cutile.entry
def even_column_sums(z: Mut[Tensor[f32, ["BM"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
                     BK: Const[int]):
    acc = zeros((BM,), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        if k % 2 == 1:
            continue  # skip the odd column tiles
        acc = acc + x.load_tile((BM, BK), (block_id(0), k)).sum(axis=1)
    z.store(acc)


def test_continue_skips_iterations() -> None:
    xs = rng.standard_normal((50, 70)).astype(np.float32)
    z = api.zeros([50], f32).partition([16])
    z, _ = even_column_sums(z, api.from_numpy(xs), BK=16).sync()
    ref = sum(xs[:, k * 16:(k + 1) * 16].astype(np.float64).sum(axis=1) for k in (0, 2, 4))
    np.testing.assert_allclose(z.unpartition().to_numpy(), ref, rtol=1e-5, atol=1e-5)


@cutile.entry
def nested_exits(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], n: i32, B: Const[int]):
    t = load_tile_like(x, z)
    i = 0
    total = 0.0
    while True:
        if i >= n:
            break
        for k in range(8):
            if k > i:
                break  # leaves the `for` only
            if k == 1:
                continue
            total = total + t.sum() * 0.001
        i += 1
    z.store(t + total)


@pytest.mark.parametrize("n", [0, 2, 5])
def test_break_and_continue_leave_the_innermost_loop(n: int) -> None:
    xs = rng.uniform(0, 3, 300).astype(np.float32)
    z = api.zeros([300], f32).partition([128])
    z, _, _ = nested_exits(z, api.from_numpy(xs), n).sync()
    ref = []
    for t in tiles_of(xs, 128):
        total = np.float32(0)
        for i in range(n):
            for k in range(8):
                if k > i:
                    break
                if k == 1:
                    continue
                total = np.float32(total + np.float32(t.sum()) * np.float32(0.001))
        ref.append(t + total)
    np.testing.assert_allclose(z.unpartition().to_numpy(), np.concatenate(ref)[:300], rtol=1e-6)


@cutile.entry
def count_steps(z: Mut[Tensor[i32, ["B"]]], lo: i32, hi: i32, stop: i32, B: Const[int]):
    n = 0
    for k in range(lo, hi, 7):
        if k == stop:
            break
        n += 1
    z.store(full((B,), n, i32))


@pytest.mark.parametrize(("lo", "hi", "stop"), [
    (2**31 - 40, 2**31 - 1, -1),  # the counter passes 2**31 - 1 and must not wrap around
    (0, 100, 49), (5, 5, 0), (-50, 50, -1),
])
def test_a_counted_loop_does_not_wrap_near_the_top_of_i32(lo: int, hi: int, stop: int) -> None:
    z = api.zeros([64], np.int32).partition([64])
    z, *_ = count_steps(z, lo, hi, stop).sync()
    want = 0
    for k in range(lo, hi, 7):
        if k == stop:
            break
        want += 1
    assert (z.unpartition().to_numpy() == want).all()


@cutile.entry
def first_tiles_only(z: Mut[Tensor[f32, ["B"]]], limit: i32, B: Const[int]):
    done = 0
    for (i,) in z.iter_indices():
        if done >= limit:
            break  # a block may stop early: the tiles it skips stay as they were
        z.store(full((B,), 1.0, f32), index=(i,))
        done += 1


def test_break_out_of_a_persistent_schedule_skips_tiles() -> None:
    z = api.zeros([1024], f32).partition([64]).persistent(4)
    z, _ = first_tiles_only(z, 2).sync()
    written = z.unpartition().to_numpy().reshape(16, 64)[:, 0]
    # Block b visits tiles b, b + 4, b + 8, ...: the first two of each are written.
    np.testing.assert_array_equal(written, [1.0] * 8 + [0.0] * 8)


# ----------------------------------------------------------------------------- return


@cutile.device
def scaled_if(t, n):
    if n > 3:
        return t * 2.0
    return t


@cutile.device
def first_over(t, limit, n):
    for k in range(n):
        if (t * k).max() > limit:
            return k, t * k  # from inside a loop, a tuple
    return n, t


@cutile.entry
def early_returns(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], n: i32, B: Const[int]):
    k, t = first_over(load_tile_like(x, z), 10.0, n)
    z.store(scaled_if(t, n) + k)


@pytest.mark.parametrize("n", [0, 3, 20])
def test_device_functions_return_early(n: int) -> None:
    xs = rng.uniform(0, 3, 300).astype(np.float32)
    z = api.zeros([300], f32).partition([128])
    z, _, _ = early_returns(z, api.from_numpy(xs), n).sync()
    ref = []
    for t in tiles_of(xs, 128):
        kk, tt = n, t
        for k in range(n):
            if (t * k).max() > 10.0:
                kk, tt = k, t * np.float32(k)
                break
        ref.append((tt * 2 if n > 3 else tt) + kk)
    np.testing.assert_allclose(z.unpartition().to_numpy(), np.concatenate(ref)[:300], rtol=1e-6)


@cutile.device
def find(t, n, m):
    for i in range(n):
        j = 0
        while j < m:
            if (t * (i + j)).max() > 20.0:
                return i * 10 + j  # from two loops deep
            j += 1
    return -1


@cutile.entry
def nested_returns(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], n: i32, B: Const[int]):
    t = load_tile_like(x, z)
    acc = 0.0
    for r in range(3):
        acc = acc + find(t, n, r + 1)
    p = (1, t)  # a tuple carried through a loop and a branch
    q = 0
    while q < 2:
        if n > 1:
            p = (p[0] + 1, p[1] * 0.5)
        q += 1
    z.store(p[1] + acc + p[0])


@pytest.mark.parametrize("n", [0, 1, 2, 6])
def test_returns_from_nested_loops_and_carried_tuples(n: int) -> None:
    xs = rng.uniform(0, 4, 300).astype(np.float32)
    z = api.zeros([300], f32).partition([128])
    z, _, _ = nested_returns(z, api.from_numpy(xs), n).sync()
    ref = []
    for t in tiles_of(xs, 128):
        def find(m: int, t: np.ndarray = t) -> int:
            for i in range(n):
                for j in range(m):
                    if (t * np.float32(i + j)).max() > 20.0:
                        return i * 10 + j
            return -1

        acc = np.float32(sum(find(r + 1) for r in range(3)))
        p0, p1 = 1, t
        for _ in range(2):
            if n > 1:
                p0, p1 = p0 + 1, p1 * np.float32(0.5)
        ref.append(p1 + acc + p0)
    np.testing.assert_allclose(z.unpartition().to_numpy(), np.concatenate(ref)[:300], rtol=1e-6)


@cutile.entry
def stop_at_negative(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, z)
    for _ in range(4):
        if t.min() < 0.0:
            return  # a bare `return` from inside a loop of an entry
        t = t - 1.0
    z.store(t)


def test_an_entry_returns_from_a_loop() -> None:
    xs = np.array([5.0] * 64 + [2.5] * 64, dtype=np.float32)
    z = api.full([128], 9.0, f32).partition([64])
    z, _ = stop_at_negative(z, api.from_numpy(xs)).sync()
    out = z.unpartition().to_numpy().reshape(2, 64)[:, 0]
    np.testing.assert_array_equal(out, [1.0, 9.0])  # block 1 went negative and returned


@cutile.entry
def skip_block_one(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
    if block_id(0) == 1:
        return  # a bare `return` in an entry: this block stores nothing
    z.store(full((B,), 7.0, f32))


def test_an_entry_returns_early() -> None:
    z = api.zeros([192], f32).partition([64])
    (z,) = skip_block_one(z).sync()
    out = z.unpartition().to_numpy().reshape(3, 64)
    np.testing.assert_array_equal(out[:, 0], [7.0, 0.0, 7.0])


# ----------------------------------------------------------------------------- print


@cutile.entry
def prints(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], n: i32, B: Const[int]):
    t = load_tile_like(x, z)
    print("block", block_id(0), "of", num_blocks(0), "n =", n)
    print(f"t = {t:.1f} B={B} sum={t.sum():+.2f} 100%", end="|\n")
    i = 0
    while i < 2:
        print(f"i={i:03d}")
        i += 1
    z.store(t)


def test_print_writes_each_blocks_lines_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    if driver.backend() == "gpu":
        pytest.skip("device printf goes to the GPU's stdout")
    z = api.zeros([8], f32).partition([4])
    z, _, _ = prints(z, api.from_numpy(np.arange(8, dtype=np.float32)), 7).sync()
    out = capsys.readouterr().out
    assert out == (
        "block 0 of 2 n = 7\nt = [0.0, 1.0, 2.0, 3.0] B=4 sum=+6.00 100%|\ni=000\ni=001\n"
        "block 1 of 2 n = 7\nt = [4.0, 5.0, 6.0, 7.0] B=4 sum=+22.00 100%|\ni=000\ni=001\n"
    )
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(8))


def test_print_lowers_to_one_print_tko_per_call() -> None:
    fmts = [op.attrs["str"] for op in _lowered(prints, B=4).module.functions[0].walk()
            if op.name == "print_tko"]
    assert fmts == ["block %d of %d n = %d\n", "t = %.1f B=4 sum=%+.2f 100%%|\n",
                    "i=%03d\n"]


# ----------------------------------------------------------------------------- assembly


ACCEPTED: list[tuple[Any, dict[str, int]]] = [
    (newton_sqrt, {"B": 128}), (halve_n_times, {"B": 128}), (while_false, {"B": 64, "N": 5}),
    (double_until, {"B": 128}), (even_column_sums, {"BM": 16, "BK": 16}),
    (nested_exits, {"B": 128}), (count_steps, {"B": 64}), (first_tiles_only, {"B": 64}),
    (early_returns, {"B": 128}), (skip_block_one, {"B": 64}), (prints, {"B": 4}),
    (nested_returns, {"B": 128}), (stop_at_negative, {"B": 64}),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("kernel", "consts"), ACCEPTED, ids=lambda v: getattr(v, "name", ""))
def test_control_flow_assembles_for_sm90(kernel: Any, consts: dict[str, int]) -> None:
    assert kernel.compile(target="sm_90", **consts).cubin


def test_a_break_makes_the_for_a_loop() -> None:
    ops = [op.name for op in _lowered(double_until, B=128).module.functions[0].walk()]
    assert "loop" in ops and "for" not in ops and "break" in ops
    ops = [op.name for op in _lowered(even_column_sums, BM=16, BK=16)
           .module.functions[0].walk()]
    assert "for" in ops and "loop" not in ops and "continue" in ops


# ----------------------------------------------------------------------------- refusals

def kernel_from(src: str, tmp_path: pathlib.Path) -> Any:
    return load_kernel(tmp_path, src)


@pytest.mark.parametrize(("src", "code", "needle"), [
    # a store indexed by a while counter: unknown at the loop head
    ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], n: i32):\n    i = block_id(0)\n"
     "    while i < n:\n        z.store(zeros((16,), f32), index=(i,))\n"
     "        i = i + num_blocks(0)\n", "CT2003", "known only while the kernel runs"),
    # ... and after a `break`, the loop variable is any of its values
    ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], n: i32):\n    i = block_id(0)\n"
     "    for i in range(num_blocks(0)):\n        if i == n:\n            break\n"
     "    z.store(zeros((16,), f32), index=(i,))\n", "CT2003", "cannot prove"),
    # a load at a while counter can only be checked on the device
    ("@cutile.entry(deny_in_kernel_checks=True)\n"
     "def k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]], n: i32):\n"
     "    acc = zeros((16,), f32)\n    i = 0\n    while i < n:\n"
     "        acc = acc + x.load_tile((16,), (i,))\n        i += 1\n    z.store(acc)\n",
     "CT2008", "deny_in_kernel_checks"),
    # a device function that may end without a value
    ("@cutile.device\ndef f(t, n):\n    while n > 0:\n        return t\n\n"
     "@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], n: i32):\n    z.store(f(z.load(), n))\n",
     "CT3015", "returns a value on some paths and nothing on others"),
    ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]]):\n    for i in range(3):\n"
     "        continue\n        z.store(zeros((16,), f32))\n", "CT0001", "never runs"),
    ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]]):\n    t = z.load()\n"
     "    print(f'{t!r}')\n    z.store(t)\n", "CT0001", "conversions"),
    ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]]):\n    print(z)\n"
     "    z.store(zeros((16,), f32))\n", "CT1010", "cannot be put in a tuple"),
    ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]]):\n    print(1, file=None)\n"
     "    z.store(zeros((16,), f32))\n", "CT3039", "has no parameter `file`"),
])
def test_the_checker_and_the_compiler_refuse(src: str, code: str, needle: str,
                                              tmp_path: pathlib.Path) -> None:
    k = kernel_from(src, tmp_path)
    with pytest.raises(cutile.KernelCheckError) as info:
        k.check()
    assert info.value.codes[0] == code, str(info.value)
    assert needle in str(info.value)


@pytest.mark.parametrize(("body", "needle"), [
    ("    t = z.load()\n    print(f'{t:d}')\n", "needs integers"),
    ("    t = z.load()\n    print(f'{t:,}')\n", "digit grouping"),
    ("    for i in range(2):\n        pass\n    print(i)\n", "`i` is not defined here"),
])
def test_the_lowering_refuses(body: str, needle: str, tmp_path: pathlib.Path) -> None:
    k = kernel_from(f"@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]]):\n{body}"
                    "    z.store(zeros((16,), f32))\n", tmp_path)
    with pytest.raises(cutile.KernelCheckError) as info:
        _lowered(k)
    assert needle in str(info.value)


def _lowered(kernel: Any, **consts: int) -> Any:
    return kernel.lowered(kernel.specialization(consts))
