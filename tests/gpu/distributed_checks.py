"""Run by every rank of `torchrun --nproc-per-node=N tests/gpu/distributed_checks.py`
(tests/gpu/test_distributed_gpu.py starts it): cutile's collectives through NCCL, each
checked on random data of every rank, and the ledger holding their tensors:

- all_gather, all_reduce (max bit for bit, sum to rounding) and broadcast give the
  answers numpy computes from every rank's data;
- a collective after a long kernel that writes its input waits for it (an event on
  another stream), and a host read of its output (through a view the program kept)
  waits for the collective: a missing wait shows as wrong values;
- while torch enqueues the NCCL call (between the ledger's two steps), a host read of a
  held tensor and a launch reading it are refused (CT5008), not ordered too early.

Prints `rank R: ok` at the end; any failure raises (a non-zero exit).
"""

from __future__ import annotations

import time

import numpy as np
from gpu_kernels import smooth

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.distributed import all_gather, all_reduce, broadcast
from cutile.runtime import streams

N = 1 << 22
TILE = 1024


@cutile.entry
def fill(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + 1.0)


def rand(rank: int, n: int = N) -> np.ndarray:
    return np.random.default_rng(100 + rank).standard_normal(n).astype(np.float32)


def collectives_give_the_right_answers(w: cutile.distributed.World) -> None:
    mine = rand(w.rank).reshape(-1, 64)
    every = [rand(r).reshape(-1, 64) for r in range(w.size)]
    out = api.empty([w.size * mine.shape[0], 64], f32)
    out, _ = all_gather(out, api.from_numpy(mine)).sync()
    np.testing.assert_array_equal(out.to_numpy(), np.concatenate(every))
    (t,) = all_reduce(api.from_numpy(mine), "max").sync()
    np.testing.assert_array_equal(t.to_numpy(), np.maximum.reduce(every))
    (t,) = all_reduce(api.from_numpy(mine), "sum").sync()
    np.testing.assert_allclose(t.to_numpy(), np.sum(every, axis=0, dtype=np.float64),
                               rtol=1e-5, atol=1e-5)
    (t,) = broadcast(api.from_numpy(mine), w.size - 1).sync()
    np.testing.assert_array_equal(t.to_numpy(), every[-1])


def steps_for(seconds: float) -> int:
    x = api.from_numpy(rand(0))
    z, x, _ = smooth(api.empty([N], f32).partition([TILE]), x, 1000).sync()
    t0 = time.perf_counter()
    smooth(z, x, 20_000).sync()
    return max(1000, int(seconds / ((time.perf_counter() - t0) / 20_000)))


def a_collective_waits_and_is_waited_for(w: cutile.distributed.World) -> None:
    steps = steps_for(0.1)
    xs = rand(w.rank)
    out = api.empty([w.size * N], f32)
    seen = out[:]  # the program's own view of the output, outside the op
    writer, comm = cutile.Stream("writer"), cutile.Stream("comm")
    cutile.synchronize()
    waits = streams.stats()["stream_waits"]

    def gather(z: api.Partition, x: api.Tensor, n: int) -> cutile.DeviceOp:
        # z is still being written on `writer`: the gather on `comm` waits on its event
        return all_gather(out, z.unpartition()).on(comm)

    h = smooth(api.empty([N], f32).partition([TILE]), api.from_numpy(xs), steps).on(
        writer).then(gather).submit()
    assert streams.stats()["stream_waits"] > waits
    got = seen.to_numpy()  # waits for the gather, which waited for every rank's kernel
    for r in range(w.size):
        np.testing.assert_allclose(got[r * N:(r + 1) * N], rand(r) / 2, rtol=1e-5,
                                   atol=1e-6)
    h.wait()


def a_held_tensor_is_refused_while_torch_enqueues(w: cutile.distributed.World) -> None:
    import torch.distributed as dist

    t = api.from_numpy(rand(w.rank, 4096))
    alias = t[:]
    refused: list[str] = []
    original = dist.all_reduce

    def sneaky(*args: object, **kwargs: object) -> object:
        # inside the collective's enqueue: the ledger holds `t` for it on no stream
        for attempt in (alias.to_numpy,
                        lambda: fill(api.empty([4096], f32).partition([TILE]), alias).sync()):
            try:
                attempt()
            except cutile.BorrowError as err:
                refused.append(err.code)
        return original(*args, **kwargs)

    dist.all_reduce = sneaky  # type: ignore[assignment]
    try:
        (t,) = all_reduce(t, "max").sync()
    finally:
        dist.all_reduce = original
    assert refused == ["CT5008", "CT5008"], refused
    every = [rand(r, 4096) for r in range(w.size)]
    np.testing.assert_array_equal(alias.to_numpy(), np.maximum.reduce(every))


def main() -> None:
    w = cutile.distributed.init()
    assert w.backend == "nccl" and cutile.current_device() == w.device == w.local_rank
    collectives_give_the_right_answers(w)
    a_collective_waits_and_is_waited_for(w)
    a_held_tensor_is_refused_while_torch_enqueues(w)
    cutile.distributed.barrier()
    print(f"rank {w.rank}: ok", flush=True)
    cutile.distributed.destroy()


if __name__ == "__main__":
    main()
