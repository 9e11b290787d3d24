"""DeviceOp composition: `await`, `.then`, `cutile.zip`."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like


@cutile.entry
def axpb(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a + 1.0)


def _x(n: int = 512) -> api.Tensor:
    return api.from_numpy(np.arange(n, dtype=np.float32))


def test_await_runs_and_hands_back() -> None:
    async def go() -> np.ndarray:
        z, x, _ = await axpb(api.zeros([512], f32).partition([128]), _x(), 2.0)
        assert x.to_numpy()[5] == 5
        return z.unpartition().to_numpy()

    np.testing.assert_array_equal(asyncio.run(go()), np.arange(512) * 2.0 + 1)


def test_concurrent_awaits_on_independent_tensors() -> None:
    async def go() -> list[np.ndarray]:
        ops = [axpb(api.zeros([512], f32).partition([128]), _x(), float(a)) for a in range(4)]
        results = await asyncio.gather(*ops)
        return [z.unpartition().to_numpy() for z, _, _ in results]

    for a, out in enumerate(asyncio.run(go())):
        np.testing.assert_array_equal(out, np.arange(512) * a + 1)


def test_then_chains_a_second_launch_on_the_results() -> None:
    op = axpb(api.zeros([512], f32).partition([128]), _x(), 3.0).then(
        lambda z, x, a: axpb(api.zeros([512], f32).partition([128]), z.unpartition(), 0.5)
    )
    w, z, _ = op.sync()
    np.testing.assert_array_equal(w.unpartition().to_numpy(), (np.arange(512) * 3 + 1) * 0.5 + 1)
    assert z.to_numpy()[1] == 4.0


def test_zip_returns_every_result() -> None:
    x1, x2 = _x(), _x(256)
    (z1, _, _), (z2, _, _) = cutile.zip(
        axpb(api.zeros([512], f32).partition([128]), x1, 1.0),
        axpb(api.zeros([256], f32).partition([64]), x2, -1.0),
    ).sync()
    np.testing.assert_array_equal(z1.unpartition().to_numpy(), np.arange(512) + 1)
    np.testing.assert_array_equal(z2.unpartition().to_numpy(), 1 - np.arange(256))


def test_a_pending_op_holds_its_tensors() -> None:
    x = _x()
    op = axpb(api.zeros([512], f32).partition([128]), x, 1.0)
    with pytest.raises(cutile.BorrowError) as info:
        x.to_numpy()
    assert info.value.code == "CT5001"
    _, x, _ = op.sync()
    assert x.to_numpy()[7] == 7
    # (an op dropped without running keeps them for good: test_unrun_ops.py)
