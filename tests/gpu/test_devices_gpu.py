"""Several GPUs in one process: tensors on each, launches on the device of their tensors
(each device loads its own copy of a kernel), copies between devices (peer access where
the hardware has it) ordered after a long writer on the other device (a missing event
wait shows as wrong values), frees ordered after a pending copy, freed blocks the runtime
keeps going back out on their own GPU only, each device's memory pool back to its level,
and a torch tensor of GPU 1 imported on device 1. The tests of two devices skip with fewer
than two GPUs visible."""

from __future__ import annotations

import time

import numpy as np
import pytest
from gpu_kernels import axpb, rand, smooth

import cutile
from cutile import api
from cutile.core import f32
from cutile.runtime import devices, driver, memory, streams

pytestmark = pytest.mark.gpu

N = 1 << 22
TILE = 1024


def two_gpus() -> None:
    if cutile.device_count() < 2:
        pytest.skip("needs two GPUs visible to the process")


def _rand(n: int = N, seed: int = 0) -> np.ndarray:
    return rand(n, seed)


def _steps(seconds: float, device: int) -> int:
    """Loop steps for which `smooth` over N elements takes about `seconds` on `device`."""
    x = api.from_numpy(_rand(), device=device)
    z = api.empty([N], f32, device=device).partition([TILE])
    z, x, _ = smooth(z, x, 1000).sync()
    t0 = time.perf_counter()
    smooth(z, x, 20_000).sync()
    return max(1000, int(seconds / ((time.perf_counter() - t0) / 20_000)))


def test_tensors_and_launches_on_the_current_gpu() -> None:
    d = cutile.current_device()
    xs = _rand(seed=1)
    x = api.from_numpy(xs)
    assert x.device == d
    op = axpb(api.empty([N], f32).partition([TILE]), x, 2.0)
    assert op.device == d
    z, _, _ = op.sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), xs * 2 + 1, rtol=1e-6)
    assert x.__dlpack_device__() == (2, d)


def test_a_launch_on_gpu_1_runs_there_with_its_own_kernel() -> None:
    two_gpus()
    xs = _rand(seed=2)
    results = []
    for dev in (0, 1):
        x = api.from_numpy(xs, device=dev)
        op = axpb(api.empty([N], f32, device=dev).partition([TILE]), x, 3.0)
        z, _, _ = op.sync()
        assert op.device == dev and op._position[0] in streams.runtime().pool_of(dev)
        results.append(z.unpartition().to_numpy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[1], xs * 3 + 1, rtol=1e-6)
    loaded = [k for k in axpb._loaded if k[0] == "gpu"]
    assert {k[1] for k in loaded} == {0, 1}  # one CUfunction per device's context


def test_tensors_of_two_gpus_are_refused() -> None:
    two_gpus()
    x = api.from_numpy(_rand(seed=3), device=1)
    z = api.empty([N], f32, device=0).partition([TILE])
    with pytest.raises(cutile.LaunchError) as err:
        axpb(z, x, 1.0)
    assert err.value.code == "CT6113" and err.value.tensor == "x"
    axpb(z, x.to(0), 1.0).sync()  # the fix the hint gives


def test_a_copy_between_gpus_waits_for_a_long_writer_on_the_source() -> None:
    two_gpus()
    xs = _rand(seed=4)
    steps = _steps(0.1, 0)
    x = api.from_numpy(xs, device=0)
    z = api.empty([N], f32, device=0).partition([TILE])
    cutile.synchronize()
    before = streams.stats()["stream_waits"]
    # `then` hands z on while the kernel still runs on GPU 0; the copy on a GPU 1 stream
    # must wait for it (an event across devices), and the host read for the copy
    copy = smooth(z, x, steps).then(lambda z, x, n: z.unpartition().to(1)).sync()
    assert copy.device == 1 and streams.stats()["stream_waits"] > before
    np.testing.assert_allclose(copy.to_numpy(), xs / 2, rtol=1e-5, atol=1e-6)
    assert devices.peer_access(0, 1) == devices.peer_access(1, 0)
    print(f"peer access between GPUs 0 and 1: {devices.peer_access(0, 1)}")


def test_a_source_freed_under_a_pending_copy_is_freed_after_it() -> None:
    two_gpus()
    big = 1 << 24
    xs = _rand(big, seed=5)
    copies = []
    for _ in range(4):
        y = api.from_numpy(xs, device=0)
        copies.append(y.to(1))
        del y  # freed on GPU 0 after the copy read it
        fresh = api.full([big], 7.0, f32, device=0)  # may reuse that memory
        del fresh
    for c in copies:
        np.testing.assert_array_equal(c.to_numpy(), xs)


def _ordinal(t: api.Tensor) -> int:
    """The device the driver says `t`'s memory is on."""
    d = driver._driver()
    attr = d.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    return int(driver.check(d.cuPointerGetAttribute(attr, t.address), "cuPointerGetAttribute"))


def test_a_kept_block_goes_back_out_on_its_own_gpu_only() -> None:
    """A block of GPU 0 freed while a copy to GPU 1 still reads it is kept for a stream of
    GPU 0 (after an event on the copy's stream), never for GPU 1's: allocations of its
    size on GPU 1 get GPU 1 memory, the next one on GPU 0 gets the block back, and the
    copy read the old values."""
    two_gpus()
    xs = _rand(seed=8)
    x = api.from_numpy(xs, device=0)
    held = x.address
    cutile.synchronize()
    kept = streams.stats()["blocks_kept"]
    y = x.to(1)
    del x  # the copy may still read it
    assert streams.stats()["blocks_kept"] == kept + 1
    others = [api.full([N], 2.0, f32, device=1) for _ in range(3)]
    assert all(t.address != held and _ordinal(t) == 1 for t in others)
    mine = api.full([N], 5.0, f32, device=0)
    assert mine.address == held and _ordinal(mine) == 0
    np.testing.assert_array_equal(y.to_numpy(), xs)
    assert (mine.to_numpy() == 5.0).all() and all((t.to_numpy() == 2.0).all() for t in others)


def test_each_gpus_pool_returns_to_its_level() -> None:
    two_gpus()
    cutile.synchronize()
    start = [memory.pool_usage(d)["used"] for d in (0, 1)]
    x = api.from_numpy(_rand(seed=6), device=0)
    for _ in range(200):
        moved = x.to(1)
        z, moved, _ = axpb(api.empty([N], f32, device=1).partition([TILE]), moved, 1.0).sync()
        del z, moved
    del x
    cutile.synchronize()
    assert [memory.pool_usage(d)["used"] for d in (0, 1)] == start


def test_a_torch_tensor_of_gpu_1_is_imported_on_device_1() -> None:
    two_gpus()
    torch = pytest.importorskip("torch")
    src = torch.randn(N, device="cuda:1")
    x = cutile.from_dlpack(src)
    assert x.device == 1
    z, _, _ = axpb(api.empty([N], f32, device=1).partition([TILE]), x, 2.0).sync()
    out = z.unpartition()
    np.testing.assert_allclose(out.to_numpy(), src.cpu().numpy() * 2 + 1, rtol=1e-6)
    back = torch.from_dlpack(out)
    assert back.device == torch.device("cuda", 1)
