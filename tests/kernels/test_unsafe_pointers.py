"""The unsafe half of the language: raw pointers (`Ptr[...]` parameters, `ptr_offset`,
`load_ptr`, `store_ptr`, `int_to_ptr`), the `assume_div_by` / `assume_bounds` hints and
`store_unchecked` (docs/unsafe.md).

Numerics against numpy on random inputs (on the interpreter here, on the GPU where there is
one), what the race and bounds detector sees through pointers (CT6911-CT6913), what the
checker refuses outside `unsafe` (CT4001, CT4004-CT4006), what the lowering refuses
(CT3082, CT3083), the launch of `Ptr` parameters (a Tensor, held exclusively: CT6110,
CT6102, CT6107, BorrowError) and the assembly of every kernel to sm_90.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Ptr,
    Tensor,
    arange,
    assume_bounds,
    assume_div_by,
    block_id,
    cdiv,
    f32,
    i32,
    i64,
    int_to_ptr,
    load_ptr,
    load_tile_like,
    ptr_offset,
    store_ptr,
    zeros,
)
from cutile.errors import InterpreterError

rng = np.random.default_rng(11)


# ------------------------------------------------------------------ kernels


@cutile.entry(unsafe=True)
def strided_gather(z: Ptr[f32], x: Ptr[f32], n: i32, m: i32, stride: i32, B: Const[int]):
    """z[i] = x[i * stride] for i < n; the padding -1 for n <= i < m; nothing past m."""
    i = block_id(0) * B + arange(B, i32)
    v = load_ptr(ptr_offset(x, i * stride), mask=i < n, padding=-1.0)
    store_ptr(ptr_offset(z, i), v, mask=i < m)


@cutile.entry(unsafe=True)
def transpose_into(z: Ptr[f32], x: Tensor[f32, [-1, -1]], BM: Const[int], BN: Const[int]):
    """z (n x m, row-major) = x.T: each block stores its tile of x transposed, through
    pointers, the ragged edge tiles masked."""
    t = x.load_tile((BM, BN), (block_id(0), block_id(1)))
    r = (block_id(0) * BM + arange(BM, i32)).reshape((BM, 1))
    c = (block_id(1) * BN + arange(BN, i32)).reshape((1, BN))
    m = x.shape[0]
    store_ptr(ptr_offset(z, c * m + r), t, mask=(r < m) & (c < x.shape[1]))


@cutile.entry(unsafe=True)
def row_sums(z: Mut[Tensor[f32, ["BM"]]], x: Ptr[f32], m: i32, n: i32, BM: Const[int],
             BN: Const[int]):
    """Sums of the rows of x (m x n, row-major), a pointer tile walked along the row: the
    pointers are carried through the loop."""
    rows = (block_id(0) * BM + arange(BM, i32)).reshape((BM, 1))
    cols = arange(BN, i32).reshape((1, BN))
    p = ptr_offset(x, rows * n + cols)
    acc = zeros((BM,), f32)
    for k in range(cdiv(n, BN)):
        acc = acc + load_ptr(p, mask=(rows < m) & (k * BN + cols < n)).sum(axis=1)
        p = ptr_offset(p, BN)
    z.store(acc)


@cutile.entry(unsafe=True)
def window_hinted(z: Mut[Tensor[f32, ["B"]]], x: Ptr[f32], shift: i32, n: i32,
                  B: Const[int]):
    """z[i] = x[shift + i] (0 past n), with every hint there is: shift a multiple of 16,
    the block's base a multiple of B, offsets in [0, 2^30], x 16-byte aligned."""
    s = assume_bounds(assume_div_by(shift, 16), 0)
    base = assume_div_by(block_id(0) * B, B)
    offs = assume_bounds(s + base + arange(B, i32), 0, 2**30)
    p = assume_div_by(x, 16)
    z.store(load_ptr(ptr_offset(p, offs), mask=offs < n, padding=0.0))


@cutile.entry(unsafe=True)
def window_plain(z: Mut[Tensor[f32, ["B"]]], x: Ptr[f32], shift: i32, n: i32,
                 B: Const[int]):
    offs = shift + block_id(0) * B + arange(B, i32)
    z.store(load_ptr(ptr_offset(x, offs), mask=offs < n, padding=0.0))


@cutile.entry(unsafe=True)
def scale_into(z: Ptr[f32], x: Ptr[f32], n: i32, a: f32, B: Const[int]):
    i = block_id(0) * B + arange(B, i32)
    store_ptr(ptr_offset(z, i), load_ptr(ptr_offset(x, i), mask=i < n) * a, mask=i < n)


@cutile.entry(unsafe=True)
def increments(z: Ptr[i32], flag: i32, B: Const[int]):
    """Read-modify-writes through one pointer tile, in a branch and a loop: a block's
    pointer accesses happen in program order."""
    p = ptr_offset(z, block_id(0) * B + arange(B, i32))
    if flag > 0:
        store_ptr(p, load_ptr(p) * 3)
    for j in range(3):
        store_ptr(p, load_ptr(p) + j)


@cutile.entry
def shifted_copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    """`store_unchecked`: each block stores its tile one tile to the right (the last one
    wraps), an index map the checker is not asked to prove."""
    with cutile.unsafe():
        z.store_unchecked(load_tile_like(x, z), ((block_id(0) + 1) % cdiv(z.shape[0], B),))


@cutile.entry(unsafe=True)
def all_blocks_write_the_head(z: Ptr[f32], B: Const[int]):
    store_ptr(ptr_offset(z, arange(B, i32)), 1.0)  # every block: z[0:B]


@cutile.entry(unsafe=True)
def reads_the_next_blocks_part(z: Ptr[f32], B: Const[int]):
    i = block_id(0) * B + arange(B, i32)
    store_ptr(ptr_offset(z, i), 1.0)
    load_ptr(ptr_offset(z, i + B), mask=i + B < 2 * B)  # block 0 reads block 1's part


@cutile.entry(unsafe=True)
def unmasked_copy(z: Ptr[f32], x: Ptr[f32], B: Const[int]):
    i = block_id(0) * B + arange(B, i32)
    store_ptr(ptr_offset(z, i), load_ptr(ptr_offset(x, i)))  # past the end on the last tile


@cutile.entry(unsafe=True)
def forged(z: Mut[Tensor[f32, ["B"]]], addr: i64, B: Const[int]):
    z.store(load_ptr(ptr_offset(int_to_ptr(addr, f32), arange(B, i32))))


def cdiv_(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------ numerics


@pytest.mark.parametrize(("n", "m", "stride"), [(100, 128, 3), (37, 50, 1), (64, 64, 7),
                                               (1, 130, 2)])
def test_a_strided_gather_with_a_mask_and_padding(n: int, m: int, stride: int) -> None:
    xs = rng.standard_normal((n - 1) * stride + 1).astype(np.float32)
    z, x, *_ = strided_gather(api.full([m], 5.0, f32), api.from_numpy(xs), n, m, stride,
                              B=32, grid=(cdiv_(m, 32),)).sync()
    want = np.full(m, -1.0, np.float32)
    want[:n] = xs[::stride][:n]
    np.testing.assert_array_equal(z.to_numpy(), want)
    np.testing.assert_array_equal(x.to_numpy(), xs)  # handed back untouched


@pytest.mark.parametrize(("m", "n"), [(37, 70), (32, 64), (5, 3)])
def test_a_transposed_store_through_pointers(m: int, n: int) -> None:
    xs = rng.standard_normal((m, n)).astype(np.float32)
    z, _ = transpose_into(api.full([n, m], np.nan, f32), api.from_numpy(xs), BM=16, BN=32,
                          grid=(cdiv_(m, 16), cdiv_(n, 32))).sync()
    np.testing.assert_array_equal(z.to_numpy(), xs.T)


def test_pointers_carried_through_a_loop_with_a_ragged_last_tile() -> None:
    m, n = 45, 100
    xs = rng.standard_normal((m, n)).astype(np.float32)
    z, *_ = row_sums(api.zeros([m], f32).partition([16]), api.from_numpy(xs), m, n,
                     BN=32).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), xs.sum(axis=1), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize(("shift", "n"), [(0, 300), (48, 300), (160, 200)])
def test_assume_hints_compute_what_the_kernel_without_them_does(shift: int, n: int) -> None:
    xs = rng.standard_normal(n).astype(np.float32)
    want = np.zeros(256, np.float32)
    got = xs[shift:shift + 256]
    want[:got.size] = got
    for k in (window_hinted, window_plain):
        z, *_ = k(api.zeros([256], f32).partition([64]), api.from_numpy(xs), shift, n).sync()
        np.testing.assert_array_equal(z.unpartition().to_numpy(), want, err_msg=k.name)


def test_the_interpreter_checks_an_assumption(interpreter: None) -> None:
    xs = api.from_numpy(np.zeros(100, np.float32))
    with pytest.raises(InterpreterError) as info:
        window_hinted(api.zeros([64], f32).partition([64]), xs, 8, 100).sync()
    assert "not a multiple of 16" in str(info.value)


@pytest.mark.parametrize("flag", [0, 1])
def test_a_blocks_pointer_accesses_happen_in_program_order(flag: int) -> None:
    zs = rng.integers(-100, 100, 96).astype(np.int32)
    z, _ = increments(api.from_numpy(zs), flag, B=32, grid=(3,)).sync()
    np.testing.assert_array_equal(z.to_numpy(), zs * (3 if flag else 1) + 3)


def test_store_unchecked_lowers_and_stores_where_it_is_told() -> None:
    xs = rng.standard_normal(128).astype(np.float32)
    z, _ = shifted_copy(api.zeros([128], f32).partition([32]), api.from_numpy(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.roll(xs, 32))


# ------------------------------------------------------------------ the race detector




def test_two_blocks_storing_one_element_through_pointers_race(interpreter: None) -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        all_blocks_write_the_head(api.zeros([64], f32), B=32, grid=(2,)).sync()
    err = info.value
    assert (err.code, err.kind, err.tensor, err.element) == ("CT6911", "write-write", "z",
                                                              (0,))
    assert err.blocks == ((0, 0, 0), (1, 0, 0))


def test_a_read_of_another_blocks_store_through_pointers_races(interpreter: None) -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        reads_the_next_blocks_part(api.zeros([64], f32), B=32, grid=(2,)).sync()
    assert (info.value.code, info.value.element) == ("CT6912", (32,))


def test_a_pointer_past_its_tensor_is_out_of_bounds(interpreter: None) -> None:
    """Even inside one allocation: `x` is a view of a bigger tensor, and the bytes after it
    belong to someone else."""
    big = api.zeros([80], f32)
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        unmasked_copy(api.zeros([64], f32), big[:40], B=32, grid=(2,)).sync()
    err = info.value
    assert (err.code, err.kind, err.tensor, err.element) == ("CT6913", "out-of-bounds", "x",
                                                              (40,))
    assert "reads x[40], outside `x` (shape [40])" in str(err)


def test_disjoint_pointer_stores_are_no_race(interpreter: None) -> None:
    xs = rng.standard_normal(100).astype(np.float32)
    with cutile.check_races():
        z, *_ = scale_into(api.zeros([100], f32), api.from_numpy(xs), 100, 2.0, B=32,
                           grid=(4,)).sync()
    np.testing.assert_array_equal(z.to_numpy(), xs * 2)


def test_a_forged_pointer_is_inside_no_argument(interpreter: None) -> None:
    with cutile.check_races(), pytest.raises(cutile.RaceError) as info:
        forged(api.zeros([16], f32).partition([16]), 4096).sync()
    assert info.value.code == "CT6913" and "inside no argument" in str(info.value)


# ------------------------------------------------------------------ the checker


def codes_of(fn: Callable[..., Any], unsafe: bool = False) -> list[str]:
    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(unsafe=unsafe)(fn).check()
    return list(info.value.codes)


def test_each_pointer_operation_needs_unsafe_ct4001() -> None:
    def forge(z: Mut[Tensor[f32, [16]]], addr: i64):
        int_to_ptr(addr, f32)
        z.store(zeros((16,), f32))

    def offset(z: Mut[Tensor[f32, [16]]], addr: i64):
        with cutile.unsafe():
            p = int_to_ptr(addr, f32)
        ptr_offset(p, arange(16, i32))
        z.store(zeros((16,), f32))

    def load(z: Mut[Tensor[f32, [16]]], addr: i64):
        with cutile.unsafe():
            p = ptr_offset(int_to_ptr(addr, f32), arange(16, i32))
        z.store(load_ptr(p))

    def store(z: Mut[Tensor[f32, [16]]], addr: i64):
        with cutile.unsafe():
            p = ptr_offset(int_to_ptr(addr, f32), arange(16, i32))
        store_ptr(p, 1.0)
        z.store(zeros((16,), f32))

    for fn in (forge, offset, load, store):
        assert codes_of(fn) == ["CT4001"], fn.__name__


def test_a_pointer_parameter_needs_an_unsafe_entry_ct4006() -> None:
    def k(p: Ptr[f32]):
        store_ptr(p, 1.0)

    assert codes_of(k) == ["CT4006", "CT4001"]
    cutile.entry(unsafe=True)(k).check()


def test_assume_hints_and_unchecked_stores_need_unsafe() -> None:
    def div_by(z: Mut[Tensor[f32, [16]]], n: i32):
        assume_div_by(n, 4)
        z.store(zeros((16,), f32))

    def bounds(z: Mut[Tensor[f32, [16]]], n: i32):
        assume_bounds(n, 0, 4)
        z.store(zeros((16,), f32))

    def unchecked(z: Mut[Tensor[f32, [16]]]):
        z.store_unchecked(zeros((16,), f32), (block_id(0) + 1,))

    assert codes_of(div_by) == codes_of(bounds) == ["CT4005"]
    assert codes_of(unchecked) == ["CT4004"]


# ------------------------------------------------------------------ the lowering


def lowering_codes(fn: Callable[..., Any], **consts: Any) -> tuple[list[str], str]:
    k = cutile.entry(unsafe=True)(fn)
    k.check()  # the checker has nothing against it: the lowering knows the types
    with pytest.raises(cutile.KernelCheckError) as info:
        k.lowered(k.specialization(consts))
    return list(info.value.codes), str(info.value)


def test_what_the_compiler_refuses_about_pointers_ct3082() -> None:
    def arithmetic(p: Ptr[f32]):
        load_ptr(p + 1)

    def not_a_pointer(p: Ptr[f32], n: i32):
        load_ptr(n)

    def padding_without_mask(p: Ptr[f32]):
        load_ptr(ptr_offset(p, arange(16, i32)), padding=1.0)

    def float_offsets(p: Ptr[f32]):
        ptr_offset(p, arange(16, f32))

    def int_mask(p: Ptr[f32], n: i32):
        load_ptr(ptr_offset(p, arange(16, i32)), mask=arange(16, i32))

    for fn, needle in ((arithmetic, "a pointer is not a number"),
                       (not_a_pointer, "`load_ptr` takes pointers"),
                       (padding_without_mask, "a padding but no mask"),
                       (float_offsets, "must be integers"),
                       (int_mask, "must be a bool tile")):
        codes, text = lowering_codes(fn)
        assert codes == ["CT3082"] and needle in text, (fn.__name__, text)


def test_what_the_compiler_refuses_about_assume_ct3083() -> None:
    def zero_divisor(p: Ptr[f32], n: i32):
        assume_div_by(n, 0)

    def empty_range(p: Ptr[f32], n: i32):
        assume_bounds(n, 5, 4)

    def no_bounds(p: Ptr[f32], n: i32):
        assume_bounds(n)

    def on_floats(p: Ptr[f32], a: f32):
        assume_bounds(a, 0, 1)

    def false_constant(p: Ptr[f32]):
        assume_div_by(10, 4)

    def not_a_power_of_two(p: Ptr[f32], n: i32):
        assume_div_by(n, 6)  # Tile IR's div_by takes powers of two (tileiras refused it)

    for fn, needle in ((zero_divisor, "must be a power of two, got 0"),
                       (not_a_power_of_two, "must be a power of two, got 6"),
                       (empty_range, "lo = 5 > hi = 4"),
                       (no_bounds, "needs `lo`, `hi` or both"),
                       (on_floats, "applies to integers"),
                       (false_constant, "10 is not a multiple of 4")):
        codes, text = lowering_codes(fn)
        assert codes == ["CT3083"] and needle in text, (fn.__name__, text)


# ------------------------------------------------------------------ the launch


def test_a_ptr_argument_is_a_tensor_moved_into_the_op_and_held_exclusively() -> None:
    xs = rng.standard_normal(64).astype(np.float32)
    z, x = api.zeros([64], f32), api.from_numpy(xs)
    op = scale_into(z, x, 64, 3.0, B=32, grid=(2,))
    for t in (z, x):
        with pytest.raises(cutile.BorrowError):
            t.to_numpy()  # moved into the op until it hands them back
    z, x, *_ = op.sync()
    np.testing.assert_array_equal(z.to_numpy(), xs * 3)
    with pytest.raises(cutile.BorrowError) as info:
        scale_into(x, x, 64, 1.0, B=32, grid=(2,))  # one tensor as two pointers
    assert info.value.code == "CT5005"
    big = api.zeros([128], f32)
    with pytest.raises(cutile.BorrowError) as info:  # overlapping views of one tensor
        scale_into(big[:64], big[32:96], 64, 1.0, B=32, grid=(2,))
    assert info.value.code == "CT5006"


def test_a_ptr_parameter_refuses_what_is_not_a_tensor_of_its_type() -> None:
    x = api.from_numpy(np.zeros(64, np.float32))
    cases: list[tuple[Any, str, str]] = [
        (api.zeros([64], f32).partition([32]), "CT6110", "not a Partition"),
        (4096, "CT6110", "takes a Tensor"),
        ("z", "CT6110", "takes a Tensor"),
        (api.zeros([64], i32), "CT6102", "`f32` elements, not `i32`"),
    ]
    for arg, code, needle in cases:
        with pytest.raises(cutile.LaunchError) as info:
            scale_into(arg, x, 64, 1.0, B=32, grid=(2,))
        assert info.value.code == code and needle in str(info.value), str(info.value)
        assert info.value.tensor == "z"
    with pytest.raises(cutile.LaunchError) as info:
        scale_into(api.zeros([64], f32), x, 64, 1.0, B=32)  # no `Mut` output: no grid
    assert info.value.code == "CT6107"


# ------------------------------------------------------------------ autotuning


@cutile.entry(unsafe=True)
def copy_twice(z: Mut[Tensor[f32, ["B"]]], w: Ptr[f32], x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, z)
    z.store(t)
    i = block_id(0) * B + arange(B, i32)
    store_ptr(ptr_offset(w, i), t, mask=i < x.shape[0])


def test_autotune_trials_write_copies_of_pointer_arguments(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """A `Ptr` argument may be written through, so a timed trial gets a copy of it, as of
    an output: the caller's tensor is never touched by tuning."""
    from cutile.tuning import bench

    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))  # tune afresh
    monkeypatch.delenv("CUTILE_AUTOTUNE", raising=False)

    xs = rng.standard_normal(100).astype(np.float32)
    z, w, x = api.zeros([100], f32), api.full([100], 7.0, f32), api.from_numpy(xs)
    trials: list[Any] = []

    def fake_time(op: Any, runnable: Any) -> float:
        trials.append(op.values[1])
        assert op.values[1] is not w
        return 1e-6 * dict(op.consts)["B"]

    monkeypatch.setattr(bench, "can_time", lambda: True)
    monkeypatch.setattr(bench, "time_op", fake_time)
    tuned = cutile.autotune(copy_twice, configs=[cutile.Config({"B": 64}),
                                                 cutile.Config({"B": 32})])
    choice = tuned.choose(z, w, x)
    assert choice.config.consts == {"B": 32} and len(trials) == 2
    assert (w.to_numpy() == 7.0).all()  # still the caller's, unmoved and unwritten
    z, w, x = tuned(z, w, x).sync()
    np.testing.assert_array_equal(w.to_numpy(), xs)
    np.testing.assert_array_equal(z.to_numpy(), xs)


# ------------------------------------------------------------------ assembly


KERNELS = [
    (strided_gather, {"B": 64}),
    (transpose_into, {"BM": 16, "BN": 32}),
    (row_sums, {"BM": 16, "BN": 32}),
    (window_hinted, {"B": 64}),
    (window_plain, {"B": 64}),
    (scale_into, {"B": 128}),
    (increments, {"B": 32}),
    (shifted_copy, {"B": 32}),
    (forged, {"B": 16}),
    (copy_twice, {"B": 64}),
]


@pytest.mark.tileiras
@pytest.mark.parametrize(("kernel", "consts"), KERNELS, ids=lambda k: getattr(k, "name", ""))
def test_each_kernel_assembles_for_sm_90(kernel: cutile.EntryKernel, consts: dict[str, int]
                                         ) -> None:
    assert kernel.compile(target="sm_90", **consts).cubin[:4] == b"\x7fELF"
