"""Attacks on the host rules through the public API where earlier reviews did not look:
several devices (the interpreter models two, `CUTILE_INTERPRETER_DEVICES=2`), persistent
launches, raw kernels' host side, and collectives in a world of one process. Each test
is a program a user could write; the runtime must refuse it with a typed error (a stable
CTxxxx code), wait, or run it correctly (launches run under the interpreter's race
detector, `CUTILE_INTERPRET=check` in tests/conftest.py)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like


@cutile.entry
def walk(z: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    for idx in z.iter_indices():
        z.store(x.load_tile((4,), idx) + 1.0, index=idx)


@cutile.entry
def walk_two(z: Mut[Tensor[f32, [4]]], w: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    for idx in z.iter_indices():
        z.store(x.load_tile((4,), idx) + 1.0, index=idx)
    for idx in w.iter_indices():
        w.store(x.load_tile((4,), idx) + 2.0, index=idx)


@cutile.entry
def walk_and_map(z: Mut[Tensor[f32, [4]]], w: Mut[Tensor[f32, [4]]], x: Tensor[f32, [-1]]):
    for idx in z.iter_indices():
        z.store(x.load_tile((4,), idx) + 1.0, index=idx)
    w.store(load_tile_like(x, w) + 2.0)


@cutile.entry
def add1(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + 1.0)


pytestmark = pytest.mark.usefixtures("one_process_two_devices")


def _iota(n: int, offset: float = 0.0) -> Any:
    return api.from_numpy(np.arange(n, dtype=np.float32) + offset)


def _refused(fn: Any) -> cutile.CutileError:
    with pytest.raises(cutile.CutileError) as err:
        fn()
    assert err.value.code and err.value.code.startswith("CT"), err.value
    return err.value


# -- persistent launches ---------------------------------------------------------------


@pytest.mark.parametrize("blocks", [None, 1, 3, 8, 9, 100])
def test_a_persistent_schedule_covers_every_tile_whatever_the_block_count(
        blocks: int | None) -> None:
    with cutile.check_races():
        z = api.full([32], -1.0, f32).partition([4]).persistent(blocks)
        z, _ = walk(z, _iota(32)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(32) + 1)


def test_a_block_count_past_the_schedule_is_ct6109() -> None:
    z = api.zeros([32], f32).partition([4]).persistent(2**31 - 1)
    assert _refused(lambda: walk(z, _iota(32))).code == "CT6109"
    z.unpartition()  # refused before anything was taken


@pytest.mark.parametrize("blocks", [2**31, 2**63 - 1, np.uint64(2**64 - 1)])
def test_a_block_count_past_cudas_grid_is_refused_by_persistent(blocks: Any) -> None:
    p = api.zeros([32], f32).partition([4])
    with pytest.raises(cutile.CutileError) as err:
        p.persistent(blocks)
    assert err.value.code == "CT5012"
    p.unpartition()  # the partition is kept


@pytest.mark.parametrize(("tiles_z", "tiles_w"), [(8, 0), (0, 8), (8, 4)])
@pytest.mark.parametrize("blocks", [None, 3])
def test_an_empty_persistent_output_does_not_stop_the_others(tiles_z: int, tiles_w: int,
                                                             blocks: int | None) -> None:
    # Was: a persistent output without tiles made the whole launch a `[0, 0, 0]` grid,
    # so the other output's tiles were never written (its old contents came back).
    with cutile.check_races():
        z = api.full([4 * tiles_z], -1.0, f32).partition([4]).persistent(blocks)
        w = api.full([4 * tiles_w], -1.0, f32).partition([4]).persistent(blocks)
        z, w, _ = walk_two(z, w, _iota(32)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(4 * tiles_z) + 1)
    np.testing.assert_array_equal(w.unpartition().to_numpy(), np.arange(4 * tiles_w) + 2)


def test_a_regular_output_beside_an_empty_persistent_one_runs_or_is_refused() -> None:
    # Was: the regular output `w` was silently left unwritten (a `[0, 0, 0]` grid).
    with cutile.check_races():
        z = api.zeros([0], f32).partition([4]).persistent(2)
        w = api.full([8], -1.0, f32).partition([4])
        z, w, _ = walk_and_map(z, w, _iota(32)).sync()
    np.testing.assert_array_equal(w.unpartition().to_numpy(), np.arange(8) + 2)
    # without `num_blocks` the persistent grid (one block) does not match `w`'s two tiles
    z = api.zeros([0], f32).partition([4]).persistent()
    w = api.full([8], -1.0, f32).partition([4])
    assert _refused(lambda: walk_and_map(z, w, _iota(32))).code == "CT6001"
    # both empty: nothing to run, nothing lost
    z, w, _ = walk_and_map(api.zeros([0], f32).partition([4]).persistent(),
                           api.zeros([0], f32).partition([4]), _iota(4)).sync()
    assert w.unpartition().to_numpy().size == 0


@pytest.mark.parametrize("grid", [(1,), (3,), (8,), (2, 2), 0])
def test_an_explicit_grid_must_be_the_schedules(grid: Any) -> None:
    z = api.zeros([32], f32).partition([4]).persistent(2)
    assert _refused(lambda: walk(z, _iota(32), grid=grid)).code == "CT6001"
    with cutile.check_races():
        z, _ = walk(z, _iota(32), grid=(2,)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(32) + 1)


def test_persistence_on_a_kernel_without_a_schedule_is_ignored_safely() -> None:
    # `add1` does not walk `z` with `iter_indices()`: its grid stays the tile grid
    for blocks in (1, 2, 100):
        with cutile.check_races():
            z = api.zeros([32], f32).partition([4]).persistent(blocks)
            z, _ = add1(z, _iota(32)).sync()
        np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(32) + 1)
    # and a schedule walked over a plain partition runs one block per tile
    with cutile.check_races():
        z, _ = walk(api.zeros([32], f32).partition([4]), _iota(32)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(32) + 1)


# -- several devices -------------------------------------------------------------------


@cutile.entry
def accumulate(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(z.load() + load_tile_like(x, z))


def _acc_operands(device: int) -> tuple[Any, Any]:
    return (api.zeros([8], f32, device=device).partition([4]),
            api.ones([8], f32, device=device))


def test_a_capture_refuses_an_op_of_another_device() -> None:
    # Was: the device-1 op ran at once, outside the graph (its output changed during the
    # capture), and no replay ever ran it again: a capture silently lost its work.
    z0, x0 = _acc_operands(0)
    z1, x1 = _acc_operands(1)

    def step(z0: Any, x0: Any, z1: Any, x1: Any) -> Any:
        z0, x0 = accumulate(z0, x0).sync()
        z1, x1 = accumulate(z1, x1).sync()
        return z0, z1

    err = _refused(lambda: cutile.graph(step, z0, x0, z1, x1))
    assert isinstance(err, cutile.BorrowError) and err.code == "CT5065"
    assert "device 0" in err.message and "device 1" in err.message
    # nothing ran on device 1; every tensor is usable again
    assert z1.unpartition().to_numpy().tolist() == [0.0] * 8
    assert x1.to_numpy().tolist() == [1.0] * 8


def test_a_capture_on_the_tensors_device_records_and_replays_its_work() -> None:
    z1, x1 = _acc_operands(1)
    with cutile.device(1):
        g = cutile.graph(lambda z, x: accumulate(z, x).sync()[0], z1, x1)
    assert g.read(0).tolist() == [0.0] * 8  # recorded, not run
    g.replay()
    g.replay()
    assert g.read(0).tolist() == [2.0] * 8
    # and a capture on device 1 refuses device-0 work in turn
    z0, x0 = _acc_operands(0)
    with cutile.device(1):
        assert _refused(lambda: cutile.graph(accumulate(z0, x0))).code == "CT5065"
    z0.unpartition()


def test_a_collective_of_another_device_is_refused_in_a_capture() -> None:
    # (a local collective of device 1 ran at once, outside the graph; so did a kernel)
    y1, src = api.zeros([8], f32, device=1), api.ones([8], f32, device=1)

    def with_gather(z: Any, x: Any) -> Any:
        accumulate(z, x).sync()
        return cutile.distributed.all_gather(y1, src).sync()

    assert _refused(lambda: cutile.graph(with_gather, *_acc_operands(0))).code == "CT5065"
    assert y1.to_numpy().tolist() == [0.0] * 8  # the gather never ran
    assert src.to_numpy().tolist() == [1.0] * 8



def test_a_replay_takes_an_input_from_another_device_by_copy() -> None:
    z1, x1 = _acc_operands(1)
    with cutile.device(1):
        g = cutile.graph(accumulate(z1, x1))
    g.replay(None, api.full([8], 2.0, f32, device=0)).wait()
    assert g.read(0).tolist() == [2.0] * 8
    # an input a device-0 kernel is still writing (`then` hands it on early), copied over
    z0, x0 = _acc_operands(0)
    got = accumulate(z0, x0).then(
        lambda z, x: (g.replay(None, z.unpartition().to(1)).wait(), g.read(0))[1]).sync()
    assert got.tolist() == [3.0] * 8


def test_threads_on_two_devices_launch_side_by_side() -> None:
    errors: list[BaseException] = []

    def work(device: int) -> None:
        try:
            for _ in range(10):
                with cutile.device(device):
                    z, x = _acc_operands(device)
                    z, _ = accumulate(z, x).sync()
                    assert z.device == device
                    assert z.unpartition().to_numpy().tolist() == [1.0] * 8
        except BaseException as e:  # reported below: an assert in a thread is lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i % 2,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


@pytest.mark.parametrize("shape", [[0], [4, 0], [0, 4]])
def test_an_empty_tensor_copies_to_another_device(shape: list[int]) -> None:
    moved = api.zeros(shape, f32).to(1)
    assert moved.device == 1 and moved.to_numpy().shape == tuple(shape)
    assert api.zeros([4, 4], f32)[:, 2:2].to(1).to_numpy().shape == (4, 0)


# -- collectives in a world of one process ---------------------------------------------


def test_a_collective_holds_its_tensors_by_what_it_writes() -> None:
    from cutile.distributed import all_gather

    x = _iota(16)
    assert _refused(lambda: all_gather(x, x)).code == "CT5005"
    base = _iota(32)
    assert _refused(lambda: all_gather(base[0:16], base[8:24])).code == "CT5006"
    all_gather(base[0:16], base[16:32]).sync()  # disjoint views of one buffer
    np.testing.assert_array_equal(base.to_numpy(), np.r_[np.arange(16, 32), np.arange(16, 32)])
    # the kernel's write is pending (`then` hands back before completion) when the
    # gather on device 1 reads it: the gather is ordered after it
    z, src = api.zeros([16], f32, device=1).partition([4]), _iota(16).to(1)
    dst = api.zeros([16], f32, device=1)
    dst, _ = add1(z, src).then(lambda z, x: all_gather(dst, z.unpartition())).sync()
    np.testing.assert_array_equal(dst.to_numpy(), np.arange(16) + 1)


@pytest.mark.parametrize("op", [np.array(["sum", "max"]), np.array(["sum"]), ["sum"], None, 3])
def test_a_reduction_that_is_not_a_name_is_ct6131(op: Any) -> None:
    # Was: a numpy array of names raised numpy's ValueError (`in` compared elementwise)
    t = api.zeros([4], f32)
    assert _refused(lambda: cutile.distributed.all_reduce(t, op)).code == "CT6131"
    t.partition([4])  # nothing was taken


# -- raw kernels: the host's side --------------------------------------------------------

RAW = r"""extern "C" __global__ void k(const float* x, float* y, long long n, char c) {}"""


def _raw(*params: Any) -> Any:
    return cutile.unsafe.raw_kernel(RAW, "k", list(params), block=32)


def test_a_raw_kernel_holds_written_tensors_exclusively_on_any_device() -> None:
    u = cutile.unsafe
    both_written = _raw(u.write("x", f32), u.write("y", f32), u.scalar("n", "long long"),
                        u.scalar("c", "int8_t"))
    y = api.zeros([8], f32, device=1)
    assert _refused(lambda: both_written(y, y, 8, 0, grid=1)).code == "CT5005"
    assert _refused(lambda: both_written(y[0:6], y[2:8], 8, 0, grid=1)).code == "CT5006"
    # disjoint views pass the host's checks (then the interpreter cannot run C++)
    assert _refused(lambda: both_written(y[0:4], y[4:8], 4, 0, grid=1)).code == "CT6120"
    assert y.to_numpy().tolist() == [0.0] * 8  # every refusal handed it back


@pytest.mark.nvrtc
@pytest.mark.parametrize(("params", "words"), [
    (["read", "write", ("n", "int"), ("c", "int8_t")], "is 4 bytes, but the C++ parameter 2"),
    (["read", "write", ("n", "long long")], "declares 3 parameters, but its C++ signature has 4"),
    (["read", "write", ("n", "long long"), ("c", "int8_t"), ("d", "int")], "declares 5"),
])
def test_declarations_unlike_the_cubins_signature_are_ct6123(params: list[Any],
                                                             words: str) -> None:
    u = cutile.unsafe
    made = [u.read("x", f32) if p == "read" else u.write("y", f32) if p == "write"
            else u.scalar(*p) for p in params]
    err = _refused(lambda: _raw(*made).compile("sm_90"))
    assert err.code == "CT6123" and words in err.message, err
