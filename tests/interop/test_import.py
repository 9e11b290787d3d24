"""`cutile.from_dlpack` and `cutile.unsafe.from_dlpack_exclusive` on host memory (the
interpreter): zero-copy, keep-alive, layouts, element types, and every refusal with its
code. numpy is the producer; `producers.py` stands in for what numpy cannot claim here."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutile
from cutile import _native, api
from cutile.core import f32
from cutile.runtime.interop import aliases
from cutile.runtime.tensor import injective_layout

from .producers import Capsule, CudaArray, HostArray, Legacy, OnDevice

rng = np.random.default_rng(7)


def _random(shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def values(np_dtype: Any, n: int = 64) -> np.ndarray:
    """`n` random values of an element type (every bit pattern of a float type is fair)."""
    dt = np.dtype(np_dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    return (rng.standard_normal(n) * 4).astype(np.float32).astype(dt)


def _code(fn: Any, cls: type[cutile.CutileError] = cutile.InteropError) -> str:
    with pytest.raises(cls) as info:
        fn()
    err = info.value
    assert err.hint, f"{err.code} without a hint: {err}"
    return str(err.code)


def test_a_shared_import_views_the_producers_memory() -> None:
    a = _random((6, 5))
    t = cutile.from_dlpack(a)
    assert (t.shape, t.strides, t.dtype) == ((6, 5), (5, 1), f32)
    assert t.address == a.ctypes.data  # the same bytes, not a copy
    np.testing.assert_array_equal(t.to_numpy(), a)
    a[2, 3] = 123.5  # written by the producer, read by cutile
    a[5] = -1.0
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_the_import_keeps_the_producer_alive_and_lets_it_go() -> None:
    a = _random((1000,))
    expected = a.copy()
    alive = weakref.ref(a)
    t = cutile.from_dlpack(a)
    del a
    gc.collect()
    assert alive() is not None  # the cutile tensor holds it
    np.testing.assert_array_equal(t.to_numpy(), expected)
    view = t[100:200]
    del t
    gc.collect()
    assert alive() is not None  # a view is enough
    np.testing.assert_array_equal(view.to_numpy(), expected[100:200])
    del view
    gc.collect()
    assert alive() is None  # the DLPack deleter ran: nothing leaks


@pytest.mark.parametrize("index", [
    np.s_[::2, 1:],  # strided rows, byte offset
    np.s_[3:, :],  # a byte offset alone
    np.s_[:, ::3],
    np.s_[5],  # one row: rank 1
])
def test_strided_views_and_offsets_come_in_as_they_are(index: Any) -> None:
    base = _random((9, 7))
    a = base[index]
    t = cutile.from_dlpack(a)
    assert t.shape == a.shape
    assert t.strides == tuple(s // 4 for s in a.strides)
    assert t.address == a.ctypes.data
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_a_transposed_array_keeps_its_strides() -> None:
    a = _random((4, 6)).T
    t = cutile.from_dlpack(a)
    assert (t.shape, t.strides) == ((6, 4), (1, 6))
    np.testing.assert_array_equal(t.to_numpy(), a)


@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0, 2)])
def test_empty_tensors(shape: tuple[int, ...]) -> None:
    t = cutile.from_dlpack(np.zeros(shape, np.float32))
    assert t.shape == shape and t.to_numpy().shape == shape
    e = cutile.unsafe.from_dlpack_exclusive(np.zeros(shape, np.float32))
    assert e.to_numpy().shape == shape


@pytest.mark.parametrize("np_dtype", [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64,
    # numpy's DLPack cannot carry these: they come in through `__array_interface__`
    ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
])
def test_every_element_type_comes_in_bit_exact(np_dtype: Any) -> None:
    a = values(np_dtype)
    t = cutile.from_dlpack(a)
    assert t.dtype.numpy == np.dtype(np_dtype)
    assert t.to_numpy().tobytes() == a.tobytes()


def test_a_producer_from_before_dlpack_1_is_asked_the_old_way() -> None:
    a = _random((8,))
    p = Legacy(a)
    t = cutile.from_dlpack(p)
    assert p.calls == [{"stream": None}]  # no `max_version` / `copy`: it takes neither
    np.testing.assert_array_equal(t.to_numpy(), a)
    # A legacy capsule cannot say read-only, so nothing refuses an exclusive import.
    del t
    e = cutile.unsafe.from_dlpack_exclusive(Legacy(a))
    assert e.address == a.ctypes.data


def test_objects_with_only_an_array_interface() -> None:
    a = _random((3, 4))
    t = cutile.from_dlpack(HostArray(a))
    assert t.address == a.ctypes.data
    np.testing.assert_array_equal(t.to_numpy(), a)


def test_an_exclusive_import_is_writable_in_place() -> None:
    out = np.zeros(16, np.float32)
    e = cutile.unsafe.from_dlpack_exclusive(out)
    p = e.partition([4])  # a shared import refuses this (below)
    assert p.address == out.ctypes.data
    assert p.unpartition().to_numpy().tolist() == [0.0] * 16


def test_a_shared_import_is_never_written() -> None:
    a = _random((16,))
    t = cutile.from_dlpack(a)
    assert _code(lambda: t.partition([4]), cutile.BorrowError) == "CT5040"
    assert _code(lambda: t[4:8].partition([4]), cutile.BorrowError) == "CT5040"
    # The interpreter's view of it is read-only too: a write cannot reach the producer.
    assert not t._alloc.buffer.flags.writeable
    np.testing.assert_array_equal(t.to_numpy(), a)  # still usable for reading


def test_read_only_or_copied_memory_is_not_imported_exclusively() -> None:
    a = _random((8,))
    a.flags.writeable = False
    assert cutile.from_dlpack(a).to_numpy().tolist() == a.tolist()  # reading is fine
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(a)) == "CT5046"  # DLPack flag
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(HostArray(a))) == "CT5046"
    # A capsule whose producer made a copy for the export (DLPack's is-copied flag).
    copied = Capsule(api.from_numpy(_random((4,))).__dlpack__(max_version=(1, 0), copy=True))
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(copied)) == "CT5046"


def test_memory_on_another_device_is_refused_before_any_capsule() -> None:
    for device in [(2, 0), (2, 1), (10, 0), (14, 0)]:
        p = OnDevice(_random((4,)), device)
        assert _code(lambda p=p: cutile.from_dlpack(p)) == "CT5043"
        assert p.made == 0
    with pytest.raises(cutile.InteropError, match="a CUDA GPU \\(device 1\\)") as info:
        cutile.from_dlpack(OnDevice(_random((4,)), (2, 1)))
    assert "x.cpu()" in str(info.value.hint)
    assert _code(lambda: cutile.from_dlpack(CudaArray(_random((4,))))) == "CT5043"
    # pinned host memory is host memory
    assert cutile.from_dlpack(OnDevice(_random((4,)), (3, 0))).shape == (4,)


def test_what_is_no_tensor() -> None:
    assert _code(lambda: cutile.from_dlpack([1.0, 2.0])) == "CT5042"
    assert _code(lambda: cutile.from_dlpack(3.0)) == "CT5042"
    p = api.zeros([8], f32).partition([4])
    assert _code(lambda: cutile.from_dlpack(p)) == "CT5042"
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(api.zeros([8], f32))) == "CT5042"
    cap = _random((4,)).__dlpack__(max_version=(1, 0))
    _native.dlpack_take(cap)  # consumed once
    with pytest.raises(cutile.InteropError, match="already consumed"):
        cutile.from_dlpack(Capsule(cap))
    with pytest.raises(cutile.InteropError, match="not a capsule"):
        cutile.from_dlpack(Capsule(b"bytes"))


def test_a_cutile_tensor_comes_back_as_a_view() -> None:
    t = api.from_numpy(_random((8,)))
    v = cutile.from_dlpack(t)
    assert v.address == t.address and v._storage == t._storage
    # the view is a live view under cutile's own rules: the original cannot be cut up
    assert _code(lambda: t.partition([4]), cutile.BorrowError) == "CT5004"


def test_layouts_cutile_cannot_use() -> None:
    assert _code(lambda: cutile.from_dlpack(_random((8,))[::-1])) == "CT5044"
    unaligned = np.zeros(33, np.uint8)[1:].view(np.float32)
    assert _code(lambda: cutile.from_dlpack(unaligned)) == "CT5044"
    # Two elements at one address: read shared, fine; written, blocks would race.
    base = _random((4,))
    rows = np.lib.stride_tricks.as_strided(base, (3, 4), (0, 4), writeable=True)
    t = cutile.from_dlpack(rows)
    assert t.strides == (0, 1)
    np.testing.assert_array_equal(t.to_numpy(), np.tile(base, (3, 1)))
    del t
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(rows)) == "CT5044"
    overlapping = np.lib.stride_tricks.as_strided(base, (3, 2), (4, 4), writeable=True)
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(overlapping)) == "CT5044"
    # Positive strides in any order, without overlap, are fine for an output.
    cols = np.zeros((5, 3), np.float32).T
    assert cutile.unsafe.from_dlpack_exclusive(cols).strides == (1, 3)


def test_element_types_cutile_does_not_have() -> None:
    assert _code(lambda: cutile.from_dlpack(np.zeros(4, np.complex64))) == "CT5031"
    assert _code(lambda: cutile.from_dlpack(np.zeros(4, ">f4"))) == "CT5031"  # byte order
    with pytest.raises(cutile.InteropError, match="complex"):
        cutile.from_dlpack(np.zeros(4, np.complex128))


def test_two_imports_of_one_memory_where_one_is_exclusive() -> None:
    a = _random((64,))
    gc.collect()  # earlier tests' imports, if any are garbage still
    live = aliases.live()
    e = cutile.unsafe.from_dlpack_exclusive(a)
    assert aliases.live() == live + 1
    assert _code(lambda: cutile.from_dlpack(a)) == "CT5047"
    assert _code(lambda: cutile.from_dlpack(a[10:20])) == "CT5047"  # any overlap
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(a[32:])) == "CT5047"
    del e
    gc.collect()
    assert aliases.live() == live
    s1, s2 = cutile.from_dlpack(a), cutile.from_dlpack(a)  # shared twice: fine
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(a)) == "CT5047"
    del s1, s2
    gc.collect()
    # Disjoint halves: one exclusive, one shared.
    lo = cutile.unsafe.from_dlpack_exclusive(a[:32])
    hi = cutile.from_dlpack(a[32:])
    assert (lo.shape, hi.shape) == ((32,), (32,))


def test_a_cutile_export_comes_back_only_shared() -> None:
    t = api.from_numpy(_random((16,)))
    seen = np.from_dlpack(t)  # numpy views cutile's memory
    assert _code(lambda: cutile.unsafe.from_dlpack_exclusive(seen)) == "CT5047"
    back = cutile.from_dlpack(seen)  # reading it is fine
    np.testing.assert_array_equal(back.to_numpy(), t.to_numpy())


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-4, 12)), min_size=1, max_size=4))
@settings(max_examples=400, deadline=None)
def test_the_layout_test_never_accepts_two_elements_at_one_address(
        axes: list[tuple[int, int]]) -> None:
    # An exclusive import becomes an output, and a partition is one: if the test says
    # every index has its own address, brute force must agree (it may refuse some
    # injective layouts; never the other way round).
    shape = tuple(n for n, _ in axes)
    strides = tuple(s for _, s in axes)
    if injective_layout(shape, strides):
        addresses = [sum(i * s for i, s in zip(idx, strides, strict=True))
                     for idx in np.ndindex(*shape)]
        assert len(set(addresses)) == len(addresses), (shape, strides)
