"""`Tensor.permute(*axes)`: a view of the same storage with its axes reordered (numpy's
`transpose(axes)`). A kernel writes a partition of a permuted view through its strides, so
the bytes land in the original layout; the host rules hold for the view as for any other
(a second live view blocks `partition`); axes that are not an order of the tensor's axes
are a TensorError CT5035."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f32


@cutile.entry
def rows_of(z: Mut[Tensor[f32, ["BM", 1, "D"]]], x: Tensor[f32, [-1, -1, "D"]],
            BM: Const[int], D: Const[int]):
    """Tile (m, h) of the (S, H, D) output is rows [m*BM, (m+1)*BM) of head h of x, + h."""
    m, h = block_id(0), block_id(1)
    t = x.load_tile((1, BM, D), (h, m, 0)).reshape((BM, 1, D))
    z.store(t + h.astype(f32))


def test_permute_is_a_view_with_reordered_axes() -> None:
    xs = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    t = api.from_numpy(xs)
    for axes in [(1, 0, 2), (2, 0, 1), (0, 1, 2), (2, 1, 0)]:
        v = t.permute(*axes)
        assert v.shape == xs.transpose(axes).shape
        np.testing.assert_array_equal(v.to_numpy(), xs.transpose(axes))
        assert v.address == t.address  # the same bytes, no copy


def test_a_kernel_writes_a_permuted_partition_in_the_original_layout() -> None:
    h, s, d, bm = 3, 50, 8, 16  # a ragged last query tile: 50 = 3 * 16 + 2
    xs = np.random.default_rng(2).standard_normal((h, s, d)).astype(np.float32)
    z = api.full([h, s, d], np.nan, f32).permute(1, 0, 2).partition([bm, 1, d])
    assert z.grid == (4, 3, 1)
    z, _ = rows_of(z, api.from_numpy(xs)).sync()
    out = z.unpartition()
    assert out.shape == (s, h, d)
    np.testing.assert_array_equal(out.permute(1, 0, 2).to_numpy(),
                                  xs + np.arange(h, dtype=np.float32)[:, None, None])


def test_a_live_original_blocks_partitioning_its_permuted_view() -> None:
    t = api.zeros([4, 8, 2], f32)
    v = t.permute(1, 0, 2)
    with pytest.raises(cutile.BorrowError) as info:
        v.partition([8, 1, 2])
    assert info.value.code == "CT5004"
    assert "`del`" in (info.value.hint or "")     # a way the API has (no `.copy()`)
    del t
    assert v.partition([8, 1, 2]).grid == (1, 4, 1)


@pytest.mark.parametrize("axes", [(1, 0), (0, 0, 1), (0, 1, 3), (0, 1, -1), (True, 0, 2),
                                  (0.0, 1, 2)])
def test_axes_that_are_not_an_order_are_refused(axes: tuple[object, ...]) -> None:
    t = api.zeros([2, 3, 4], f32)
    with pytest.raises(cutile.TensorError) as info:
        t.permute(*axes)  # type: ignore[arg-type]
    assert info.value.code == "CT5035"
    assert "permute(" in str(info.value) and "[2, 3, 4]" in str(info.value)


def test_a_consumed_tensor_cannot_be_permuted() -> None:
    t = api.zeros([2, 3], f32)
    p = t.partition([1, 3])
    with pytest.raises(cutile.BorrowError):
        t.permute(1, 0)
    assert p.unpartition().permute(1, 0).shape == (3, 2)
