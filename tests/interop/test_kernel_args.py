"""Kernel calls on other libraries' tensors (numpy on the interpreter, under the race
detector): read-only inputs are imported shared implicitly, outputs only through an explicit
exclusive import, and results land in the producer's memory without a copy."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Atomic, Const, Mut, Tensor, atomic_add, block_id, f32, i32, load_tile_like

rng = np.random.default_rng(3)


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry
def scale2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], a: f32,
            BM: Const[int], BN: Const[int]):
    z.store(load_tile_like(x, z) * a)


@cutile.entry
def count_blocks(counts: Atomic[Tensor[i32, [-1]]], x: Tensor[f32, [-1]], B: Const[int]):
    tile = x.load_tile((B,), (block_id(0),))
    atomic_add(counts, block_id(0) % 2, (tile > 0.0).astype(i32).sum())


def _f32(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def test_numpy_in_numpy_out_without_a_copy() -> None:
    xs, ys = _f32(1000), _f32(1000)
    out = np.full(1000, np.nan, np.float32)
    z = cutile.unsafe.from_dlpack_exclusive(out).partition([128])
    z, x, _ = add(z, xs, ys).sync()
    np.testing.assert_array_equal(out, xs + ys)  # written in place
    # The op handed back the imported (shared) tensors in the inputs' place.
    assert isinstance(x, api.Tensor) and x.address == xs.ctypes.data
    with pytest.raises(cutile.BorrowError, match="CT5040"):
        x.partition([128])


def test_keywords_and_mixed_arguments() -> None:
    xs, ys = _f32(512), _f32(512)
    z = api.zeros([512], f32).partition([128])
    z, _, _ = add(z, x=xs, y=api.from_numpy(ys)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs + ys)


def test_strided_foreign_inputs() -> None:
    base = _f32(96, 80)
    x = base[::2, 8:].T  # (72, 48), strides (1, 160): not contiguous, transposed
    out = np.zeros((72, 48), np.float32)
    z = cutile.unsafe.from_dlpack_exclusive(out).partition([8, 16])
    scale2d(z, x, 3.0).sync()
    np.testing.assert_allclose(out, x * np.float32(3.0), rtol=0, atol=0)
    # an output with foreign strides (a column-major array)
    out_t = np.zeros((48, 72), np.float32).T
    z = cutile.unsafe.from_dlpack_exclusive(out_t).partition([8, 16])
    scale2d(z, x, -0.5).sync()
    np.testing.assert_array_equal(out_t, x * np.float32(-0.5))


def test_the_op_keeps_temporary_inputs_alive() -> None:
    xs = _f32(256)
    expected = xs + 2.0
    alive = weakref.ref(xs)
    z = api.zeros([256], f32).partition([64])
    op = add(z, xs, np.full(256, 2.0, np.float32))
    del xs
    gc.collect()
    assert alive() is not None  # the op holds the import, the import holds the array
    z, x, y = op.sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), expected)
    del op, x, y
    gc.collect()
    assert alive() is None


def test_an_output_is_never_imported_implicitly() -> None:
    out = np.zeros(256, np.float32)
    with pytest.raises(cutile.LaunchError) as info:
        add(out, _f32(256), _f32(256))
    err = info.value
    assert (err.code, err.kernel, err.tensor) == ("CT6112", "add", "z")
    assert "from_dlpack_exclusive(z).partition(tile_shape)" in str(err.hint)
    counts = np.zeros(2, np.int32)
    with pytest.raises(cutile.LaunchError, match="CT6112") as info:
        count_blocks(counts, _f32(256), B=64, grid=(4,))
    assert "an `Atomic` tensor" in str(info.value)
    assert counts.tolist() == [0, 0]


def test_a_shared_import_is_not_written_through_an_atomic() -> None:
    counts = np.zeros(2, np.int32)
    with pytest.raises(cutile.BorrowError) as info:
        count_blocks(cutile.from_dlpack(counts), _f32(256), B=64, grid=(4,))
    assert info.value.code == "CT5040" and info.value.kernel == "count_blocks"
    del info  # its traceback holds the shared import (an exclusive one would clash: CT5047)
    gc.collect()
    # exclusively imported, it is written in place
    xs = _f32(256)
    c = cutile.unsafe.from_dlpack_exclusive(counts)
    count_blocks(c, xs, B=64, grid=(4,)).sync()
    per_block = (xs.reshape(4, 64) > 0).sum(axis=1)
    assert counts.tolist() == [per_block[0] + per_block[2], per_block[1] + per_block[3]]


def test_foreign_inputs_are_checked_like_cutile_ones() -> None:
    z = api.zeros([256], f32).partition([128])
    with pytest.raises(cutile.LaunchError) as info:
        add(z, _f32(256).astype(np.float64), _f32(256))
    assert info.value.code == "CT6102"  # the binder: f64 given for an f32 parameter
    z = api.zeros([256], f32).partition([128])
    with pytest.raises(cutile.InteropError) as info2:
        add(z, _f32(256)[::-1], _f32(256))
    assert info2.value.code == "CT5044" and str(info2.value).startswith("[CT5044] `x` of `add`")


def test_an_output_read_as_its_own_input_is_refused() -> None:
    out = _f32(256)
    z = cutile.unsafe.from_dlpack_exclusive(out).partition([128])
    with pytest.raises(cutile.InteropError, match="CT5047"):
        add(z, out, _f32(256))


@cutile.entry
def scale(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a)


def test_an_autotuned_kernel_takes_foreign_inputs(tmp_path: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path))
    tuned = cutile.autotune(scale, configs=[cutile.Config({"B": 64}),
                                            cutile.Config({"B": 128})], key=["x"])
    xs = _f32(1000)
    z, x, _ = tuned(api.zeros([1000], f32), xs, 1.5).sync()
    np.testing.assert_array_equal(z.to_numpy(), xs * np.float32(1.5))
    assert x.address == xs.ctypes.data  # imported, not copied
    out = np.zeros(1000, np.float32)
    with pytest.raises(cutile.LaunchError, match="CT6112"):
        tuned(out, xs, 1.5)


def _at(residue: int, n: int) -> np.ndarray:
    """`n` random f32 whose first element is `residue` bytes past a 64-byte boundary."""
    raw = np.zeros(n * 4 + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + residue
    out = raw[start:start + n * 4].view(np.float32)
    out[:] = _f32(n)
    return out


@pytest.mark.parametrize(("residue", "cut", "aligned"), [(4, 3, True), (4, 0, False),
                                                          (0, 2, False), (8, 2, True)])
def test_imported_views_are_aligned_as_their_real_address_is(residue: int, cut: int,
                                                             aligned: bool) -> None:
    # The launcher reads `align16` off the real address (numpy's data plus the view's
    # offset) and the kernel assumes it; the interpreter's address of the same element
    # kept only the view's offset: with numpy's data 4 bytes past a boundary and a view 12
    # bytes on, it said the assume did not hold (InterpreterError CT6910).
    xs = _at(residue, 64 + cut)
    x = cutile.from_dlpack(xs)[cut:]
    assert (x.address % 16 == 0) is aligned
    op = add(api.zeros([64], f32).partition([16]), x, x)
    assert op.binding.spec.tensor("x").base_align16 is aligned
    z, _, _ = op.sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs[cut:] * 2)
