"""Several devices on the GPU code path (`cutile.runtime.null_gpu(devices=2)`; the
interpreter's count, CUTILE_INTERPRETER_DEVICES=2, is what Python checks ordinals against):
what the host asks of the driver, counted. Freed blocks are kept per device as well as per
stream (memory of one device never goes to another); a layout the launch memo knows never
skips the device check (CT6113) nor lends one device's decisions to another; work on the
thread's device makes no context switch, work on another device switches and switches
back; a kernel compiled with the PDL prologue launches through `cuLaunchKernelEx`, first
call or memo hit, on either device."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import cutile
from cutile import _native, api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import LaunchError
from cutile.runtime import driver
from cutile.runtime.null_gpu import Count, null_gpu


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cutile.entry(pdl=True)
def add_pdl(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]],
            B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@pytest.fixture
def rt(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("CUTILE_INTERPRETER_DEVICES", "2")
    monkeypatch.delenv("CUTILE_DEVICE", raising=False)
    monkeypatch.delenv("CUTILE_PDL", raising=False)
    driver.reset_for_tests("interpreter")
    try:
        with null_gpu(devices=2) as r:
            yield r
    finally:
        monkeypatch.undo()
        driver.reset_for_tests(None)


def operands(device: int) -> tuple[Any, Any, Any]:
    return (api.zeros([1024], f32, device=device).partition([256]),
            api.ones([1024], f32, device=device), api.ones([1024], f32, device=device))


# Driver calls that put another device's context current for a call, and back.
SWITCH = {"cuCtxGetCurrent": 1, "cuCtxSetCurrent": 2}


def test_a_freed_block_goes_back_out_only_on_its_device(rt: Any) -> None:
    assert rt.pool_of(0) != rt.pool_of(1)
    t0 = api.empty([1024], f32, device=0)
    freed = t0.address
    del t0  # kept for device 0's home stream
    assert (rt.cached_bytes(0), rt.cached_bytes(1)) == (4096, 0)
    with Count() as c:
        t1 = api.empty([1024], f32, device=1)  # same size: device 1's pool, not the block
    assert c.made == {"cuMemAllocFromPoolAsync": 1, **SWITCH} and t1.address != freed
    del t1
    assert (rt.cached_bytes(0), rt.cached_bytes(1), rt.cached_bytes()) == (4096, 4096, 8192)
    with Count() as c:
        again = api.empty([1024], f32)  # the current device (0): its block, no switch
    assert c.made == {"cuCtxGetCurrent": 1} and again.address == freed
    with Count() as c:  # trimming one device gives back its blocks only, in its context
        assert rt.release_cached(1) == 1
    assert c.made == {"cuMemFreeAsync": 1, **SWITCH}
    assert (rt.cached_bytes(0), rt.cached_bytes(1)) == (0, 0)
    del again


def test_a_block_read_by_another_device_is_kept_for_its_own(rt: Any) -> None:
    x = api.ones([1024], f32, device=0)
    held = x.address
    with Count() as c:
        y = x.to(1)  # a peer copy on a stream of device 1 reads x
    assert c.made["cuMemcpyPeerAsync"] == 1 and y.device == 1
    with Count() as c:
        del x  # its free waits for the copy on a stream of device 0 (an event), not on 1's
    assert c.made == {"cuEventRecord": 1, "cuStreamWaitEvent": 1, "cuCtxGetCurrent": 1,
                      "cuCtxSetCurrent": 2}
    assert (rt.cached_bytes(0), rt.cached_bytes(1)) == (4096, 0)
    with Count() as c:
        other = api.empty([1024], f32, device=1)
    assert c.made["cuMemAllocFromPoolAsync"] == 1 and other.address != held
    with Count() as c:
        mine = api.empty([1024], f32, device=0)
    assert c.made == {"cuCtxGetCurrent": 1} and mine.address == held
    del y, other, mine


def test_the_launch_memo_never_skips_the_device_check(rt: Any) -> None:
    z, x, y = operands(0)
    for _ in range(3):  # the memo knows this layout on device 0 now
        z, x, y = add(z, x, y).sync()
    z1, x1, y1 = operands(1)
    for args in ((z, x1, y), (z1, x, y1), (z, x, y1)):
        with Count() as c, pytest.raises(LaunchError) as e:
            add(*args)
        assert e.value.code == "CT6113" and c.made == {}
    # nothing was taken: every tensor still launches, each set on its device
    with Count() as c:
        z, x, y = add(z, x, y).sync()
    assert c.made == {"cuLaunchKernel": 1, "cuStreamSynchronize": 1, "cuCtxGetCurrent": 2}
    for _ in range(3):  # device 1 and 0 in turn: the memo keeps each device's decisions
        op1 = add(z1, x1, y1)
        assert op1.device == 1
        with Count() as c:
            z1, x1, y1 = op1.sync()  # launched and waited for in device 1's context
        assert c.made == {"cuLaunchKernel": 1, "cuStreamSynchronize": 1,
                          "cuCtxGetCurrent": 2, "cuCtxSetCurrent": 4}
        op0 = add(z, x, y)
        assert op0.device == 0
        with Count() as c:
            z, x, y = op0.sync()
        assert c.made == {"cuLaunchKernel": 1, "cuStreamSynchronize": 1, "cuCtxGetCurrent": 2}


def test_pdl_kernels_launch_with_the_attribute_on_a_memo_hit_and_on_every_device(
        rt: Any) -> None:
    for device in (0, 1):
        z, x, y = operands(device)
        with Count() as c:
            for _ in range(4):  # the first call compiles, the others hit the memo
                z, x, y = add_pdl(z, x, y).sync()
            z, x, y = add(z, x, y).sync()  # a plain kernel keeps cuLaunchKernel
        assert c.made["cuLaunchKernelEx"] == 4 and c.made["cuLaunchKernel"] == 1


def test_cutile_pdl_0_launches_a_pdl_kernel_plainly(rt: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_PDL", "0")
    _native.invalidate_launchers()
    z, x, y = operands(0)
    with Count() as c:
        for _ in range(3):
            z, x, y = add_pdl(z, x, y).sync()
    assert c.made["cuLaunchKernel"] == 3 and "cuLaunchKernelEx" not in c.made


def test_one_device_in_use_switches_no_context(rt: Any) -> None:
    with null_gpu(devices=1):
        z, x, y = operands(0)
        z, x, y = add(z, x, y).sync()
        warm = api.empty([1024], f32)
        del warm  # (a block of that size is kept now)
        with Count() as c:
            z, x, y = add(z, x, y).sync()
            t = api.empty([1024], f32)
            del t
        assert c.made == {"cuLaunchKernel": 1, "cuStreamSynchronize": 1}
