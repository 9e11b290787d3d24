"""Tensor views as kernel arguments, attacked: slices, strided slices, permutations and
imports of another library's views, as outputs and inputs, with ragged last tiles and
persistent launches. An output's kernel must write exactly its view's elements (the rest of
the storage keeps its bytes), an input's reads must stay inside its view, and a layout that
puts two elements at one address never becomes an output. Launches run under the
interpreter's race and bounds detector (`CUTILE_INTERPRET=check`, tests/conftest.py), whose
bounds are the view's elements, not the storage's."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like

pytestmark = pytest.mark.usefixtures("checked")


@pytest.fixture
def checked() -> object:
    with cutile.check_races():
        yield None


@cutile.entry
def add1(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + 1.0)


@cutile.entry
def add1_2d(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
            BN: Const[int]):
    z.store(load_tile_like(x, z) + 1.0)


@cutile.entry
def walk(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    for idx in z.iter_indices():
        z.store(x.load_tile((B,), idx) + 1.0, index=idx)


def _values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(1.0, 2.0, shape).astype(np.float32)


@pytest.mark.parametrize("key", [slice(3, 13), slice(1, 40, 3), slice(5, 37, 2)])
@pytest.mark.parametrize("persistent", [None, 3])
def test_an_output_view_is_written_inside_its_elements_only(key: slice,
                                                            persistent: int | None) -> None:
    # The storage goes on past the view (and between its elements): the ragged last tile's
    # lanes past the view's end land in it unless the stores use the view's extent.
    out = np.full(40, -7.0, np.float32)
    view = out[key]
    xs = _values(view.shape, 1)
    z = cutile.unsafe.from_dlpack_exclusive(view).partition([4])
    if persistent is None:
        z, _ = add1(z, api.from_numpy(xs)).sync()
    else:
        z, _ = walk(z.persistent(persistent), api.from_numpy(xs)).sync()
    want = np.full(40, -7.0, np.float32)
    want[key] = xs + 1.0
    np.testing.assert_array_equal(out, want)


def test_a_permuted_column_slice_is_written_inside_its_elements_only() -> None:
    # z is a (5, 6) window of an (8, 9) buffer seen transposed: its rows are columns there,
    # 9 apart, and tiles of (4, 4) are ragged on both axes.
    out = np.full((8, 9), -7.0, np.float32)
    window = out[2:7, 1:7]
    xs = _values((6, 5), 2)
    z = cutile.unsafe.from_dlpack_exclusive(window).permute(1, 0).partition([4, 4])
    z, _ = add1_2d(z, api.from_numpy(xs)).sync()
    want = np.full((8, 9), -7.0, np.float32)
    want[2:7, 1:7] = (xs + 1.0).T
    np.testing.assert_array_equal(out, want)


def test_cutile_views_of_one_buffer_as_output_and_inputs() -> None:
    # A slice of a cutile tensor as the output (its parent dropped), strided and permuted
    # views of another tensor as the input.
    src = _values((10, 12), 3)
    x = api.from_numpy(src)[1:9:2, 3:].permute(1, 0)  # (9, 4), strides (1, 24)
    t = api.full([12, 6], -7.0, f32)
    z = t[2:11, 1:5]
    del t
    z, _ = add1_2d(z.partition([4, 2]), x).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), src[1:9:2, 3:].T + 1.0)


def test_an_input_with_an_axis_of_extent_one_and_a_large_stride_reads_clean() -> None:
    # x is (4, 1) with element strides (2, 3): the launcher passes the unit axis's stride
    # as 1, and the detector found element (2, 0) at "x[0, 1]", out of bounds (it divided
    # the offset by the unit axis's stride of 3 first).
    buf = _values((12,), 4)
    xs = np.lib.stride_tricks.as_strided(buf, shape=(4, 1), strides=(8, 12))
    z = api.zeros([4, 1], f32).partition([4, 1])
    z, _ = add1_2d(z, cutile.from_dlpack(xs)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), buf[0:8:2, None] + 1.0)


@pytest.mark.usefixtures("one_process_two_devices")
@pytest.mark.parametrize(("shape", "strides"), [((4, 8), (0, 1)), ((3, 3), (2, 2))])
def test_a_copy_of_an_aliasing_import_never_becomes_an_output(
        shape: tuple[int, int], strides: tuple[int, int]) -> None:
    # A shared import may alias (a broadcast, overlapping strides): it is only read. Its
    # copy on another device keeps the strides in cutile's own, writable memory; as an
    # output, two blocks would write one address (the detector saw blocks (0, 0, 0) and
    # (1, 0, 0) race on z[0, 0]).
    buf = _values((16,), 5)
    item = buf.itemsize
    alias = np.lib.stride_tricks.as_strided(buf, shape=shape,
                                            strides=tuple(s * item for s in strides))
    t = cutile.from_dlpack(alias).to(1)
    assert t.strides == strides
    with pytest.raises(cutile.BorrowError) as info:
        t.partition([1, 8])
    assert info.value.code == "CT5013"
    np.testing.assert_array_equal(t.to_numpy(), alias)  # not consumed
    with cutile.device(1):
        z = api.from_numpy(t.to_numpy()).partition([1, 8])  # the fix the hint gives
        z, _ = add1_2d(z, t).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), alias + 1.0)
