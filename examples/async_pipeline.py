"""Host work overlapping GPU work: batches go through a kernel while the host prepares the
next batch and checks the previous one. `op.submit()` starts the GPU and returns at once;
`await` gives the results back without blocking the event loop (a heartbeat task keeps
ticking meanwhile). Every element of every batch is checked against numpy.

    python examples/async_pipeline.py
"""

import asyncio
import time

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, i32, load_tile_like


@cutile.entry
def smooth(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], steps: i32, B: Const[int]):
    v = load_tile_like(x, z)
    acc = v
    for _ in range(steps):
        acc = acc * 0.5 + v * 0.25  # converges to v / 2
    z.store(acc)


def check(got: np.ndarray, v: np.ndarray, steps: int) -> None:
    """`steps` rounds of `acc = acc / 2 + v / 4` from `acc = v`, in closed form (float64)."""
    h = 0.5**steps
    want = v.astype(np.float64) * (h + 0.5 * (1 - h))
    err = np.abs(got.astype(np.float64) - want)
    bad = err > 1e-5 * (np.abs(want) + 1e-3)
    assert not bad.any(), f"{int(bad.sum())} wrong elements"


async def pipeline(n: int, batches: int, steps: int, tile: int) -> tuple[int, float]:
    rng = np.random.default_rng(11)
    ticks = 0
    running = True

    async def heartbeat() -> None:  # proves the event loop is free while the GPU works
        nonlocal ticks
        while running:
            ticks += 1
            await asyncio.sleep(0)

    beat = asyncio.ensure_future(heartbeat())
    host_s = 0.0
    batch = rng.standard_normal(n).astype(np.float32)
    previous: tuple[np.ndarray, np.ndarray] | None = None
    for i in range(batches):
        handle = smooth(api.empty([n], f32).partition([tile]), api.from_numpy(batch),
                        steps).submit()
        t0 = time.perf_counter()  # host work while the GPU runs this batch:
        if previous is not None:
            check(*previous, steps)  # check the last batch
        current = batch
        if i + 1 < batches:
            batch = rng.standard_normal(n).astype(np.float32)  # and make the next one
        host_s += time.perf_counter() - t0
        z, _, _ = await handle
        previous = (z.unpartition().to_numpy(), current)
    assert previous is not None
    check(*previous, steps)
    running = False
    await beat
    return ticks, host_s


def main(n: int = 1 << 23, batches: int = 6, steps: int = 20_000, tile: int = 1024) -> None:
    t0 = time.perf_counter()
    ticks, host_s = asyncio.run(pipeline(n, batches, steps, tile))
    total = time.perf_counter() - t0
    print(f"async_pipeline: {batches} batches of {n} elements, all match numpy; "
          f"{host_s * 1e3:.0f} ms of host work overlapped, {total * 1e3:.0f} ms in all; "
          f"the event loop ticked {ticks} times while awaiting")


if __name__ == "__main__":
    main()
