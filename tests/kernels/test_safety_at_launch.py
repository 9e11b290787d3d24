"""What the checker cannot prove statically is checked at launch (host predicates, fail
closed) or on the device (asserts); persistent kernels share tiles by the checked schedule."""

from __future__ import annotations

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f16, f32, i32, mma, num_tiles, sum, zeros

rng = np.random.default_rng(99)


@cutile.entry
def gemm(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]], y: Tensor[f16, [-1, -1]],
         BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        a = x.load_tile((BM, BK), (block_id(0), k))
        b = y.load_tile((BK, BN), (k, block_id(1)))
        acc = mma(a, b, acc)
    z.store(acc)


@cutile.entry
def gather_rows(z: Mut[Tensor[f32, [1, 16]]], x: Tensor[f32, [-1, 16]],
                idx: Tensor[i32, [-1, 1]]):
    j = sum(idx.load_tile((1, 1), (block_id(0), 0)))  # a row number read from memory
    z.store(x.load_tile((1, 16), (j, 0)))


@cutile.entry
def scale(z: Mut[Tensor[f32, [32, 64]]], x: Tensor[f32, [-1, -1]], G: Const[int]):
    for idx in z.iter_indices(group=G):
        z.store(x.load_tile((32, 64), idx) * 2.0, index=idx)


def test_gemm_matches_float64_reference() -> None:
    m, n, k = 96, 80, 112
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    z = api.full([m, n], np.nan, f32).partition([32, 16])
    z, _, _ = gemm(z, api.from_numpy(a), api.from_numpy(b), BK=16).sync()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    out = z.unpartition().to_numpy()
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-5


def test_launch_predicate_refuses_shapes_the_kernel_would_read_past() -> None:
    obligations = gemm.check_report()
    launch = [o.predicate for o in obligations if o.discharged == "launch"]
    assert "cdiv(dim(x, 1), BK) <= cdiv(dim(y, 0), BK)" in launch
    a = api.from_numpy(rng.standard_normal((64, 64)).astype(np.float16))
    b = api.from_numpy(rng.standard_normal((32, 64)).astype(np.float16))  # K too short
    with pytest.raises(cutile.LaunchError) as info:
        gemm(api.zeros([64, 64], f32).partition([32, 32]), a, b, BK=16)
    err = info.value
    assert err.code == "CT6200"
    assert "cdiv(dim(x, 1), BK) <= cdiv(dim(y, 0), BK)" in str(err)
    assert "dim(y, 0) = 32" in str(err)
    # refused before launch: nothing moved, the inputs are usable
    assert a.to_numpy().shape == (64, 64)


def test_data_dependent_index_gets_a_device_assert() -> None:
    (dev,) = [o for o in gather_rows.check_report() if o.discharged == "device"]
    assert dev.predicate == "0 <= j && j < dim(x, 0)"
    xs = rng.standard_normal((10, 16)).astype(np.float32)
    ids = np.array([[3], [0], [9], [9], [2]], np.int32)
    z, _, _ = gather_rows(api.zeros([5, 16], f32).partition([1, 16]), api.from_numpy(xs),
                          api.from_numpy(ids)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs[ids[:, 0]])


@cutile.entry
def clamped_rows(z: Mut[Tensor[f32, [1, 16]]], x: Tensor[f32, [-1, 16]],
                 idx: Tensor[i32, [-1, 1]]):
    j = sum(idx.load_tile((1, 1), (block_id(0), 0)))
    z.store(x.load_tile((1, 16), (max(min(j, x.shape[0] - 1), 0), 0)))


@cutile.entry
def clamped_above_only(z: Mut[Tensor[f32, [1, 16]]], x: Tensor[f32, [-1, 16]],
                       idx: Tensor[i32, [-1, 1]]):
    j = sum(idx.load_tile((1, 1), (block_id(0), 0)))
    z.store(x.load_tile((1, 16), (min(j, x.shape[0] - 1), 0)))


@cutile.entry
def clamped_row_store(z: Mut[Tensor[f32, [1, "R", 16]]], pos: Tensor[i32, [-1]],
                      R: Const[int]):
    t = sum(pos.load_tile((1,), (0,)))
    g = block_id(1)
    if t // R == g:                       # the block whose rows hold position t
        rows = z.partition_mut((1, 1, 16))
        rows.store(zeros((1, 1, 16), f32) + 1.0, (0, max(min(t - g * R, R - 1), 0), 0))


def test_a_data_dependent_index_clamped_into_bounds_needs_no_device_check() -> None:
    """min/max clamps prove a loaded index in bounds; a clamp on one side only does not."""
    assert not [o for o in clamped_rows.check_report() if o.discharged == "device"]
    (dev,) = [o for o in clamped_above_only.check_report() if o.discharged == "device"]
    assert dev.predicate.startswith("0 <= min(j, ")
    xs = rng.standard_normal((10, 16)).astype(np.float32)
    ids = np.array([[3], [-4], [12], [9]], np.int32)
    z, _, _ = clamped_rows(api.zeros([4, 16], f32).partition([1, 16]), api.from_numpy(xs),
                           api.from_numpy(ids)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs[[3, 0, 9, 9]])
    assert not [o for o in clamped_row_store.check_report() if o.discharged == "device"]
    for t in (0, 13, 31):                 # 2 kv heads, 4 blocks of 8 rows each
        z, _ = clamped_row_store(api.zeros([2, 32, 16], f32).partition([1, 8, 16]),
                                 api.from_numpy(np.array([t], np.int32))).sync()
        got = z.unpartition().to_numpy()
        want = np.zeros((2, 32, 16), np.float32)
        want[:, t] = 1.0
        np.testing.assert_array_equal(got, want)


OOB_PROBE = """
import numpy as np
from cutile import api
from cutile.core import f32
from test_safety_at_launch import gather_rows
ids = np.array([[3], [0], [10], [9], [2]], np.int32)   # row 10 is one past the end
gather_rows(api.zeros([5, 16], f32).partition([1, 16]),
            api.from_numpy(np.ones((10, 16), np.float32)), api.from_numpy(ids)).sync()
print("NOT CAUGHT")
"""


def test_device_assert_stops_an_out_of_bounds_read() -> None:
    # In a child process: on the GPU a failed device assert traps the kernel and leaves the
    # CUDA context unusable for the rest of the process.
    import subprocess
    import sys
    from pathlib import Path

    r = subprocess.run([sys.executable, "-c", OOB_PROBE], cwd=Path(__file__).parent,
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "NOT CAUGHT" not in out, out
    assert "out of bounds" in out or "device-side check" in out, out


@pytest.mark.parametrize("num_blocks", [1, 2, 5, 17, None])
@pytest.mark.parametrize("group", [1, 2, 3])
def test_persistent_schedule_covers_every_tile_once(num_blocks: int | None, group: int) -> None:
    xs = rng.standard_normal((150, 300)).astype(np.float32)  # 5 x 5 tiles, ragged
    z = api.full([150, 300], np.nan, f32).partition([32, 64]).persistent(num_blocks)
    z, _ = scale(z, api.from_numpy(xs), G=group).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), 2 * xs)


def test_persistent_grid_is_num_blocks() -> None:
    xs = api.from_numpy(np.ones((64, 128), np.float32))
    op = scale(api.zeros([64, 128], f32).partition([32, 64]).persistent(3), xs, G=1)
    assert op.binding.grid == (3, 1, 1)
    op.sync()


def test_check_report_lists_every_obligation() -> None:
    kinds = {(o.kind, o.discharged) for o in scale.check_report()}
    assert ("store-mapped-index", "static") in kinds
    assert all(o.span.line > 0 for o in scale.check_report())
