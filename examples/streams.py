"""Two independent chains on two streams, and a join that waits for both: every dependency
comes from the ledger (an op that reads what another stream writes waits on that stream's
event); nothing is synchronized by hand. Every element is checked against numpy.

    python examples/streams.py
"""

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.runtime import streams


@cutile.entry
def affine(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], a: f32, b: f32, B: Const[int]):
    z.store(load_tile_like(x, z) * a + b)


@cutile.entry
def blend(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]],
          B: Const[int]):
    z.store(load_tile_like(x, z) * 0.25 + load_tile_like(y, z) * 0.75)


def chain(x: api.Tensor, steps: list[tuple[float, float]], tile: int) -> cutile.DeviceOp:
    """`x` through `affine` once per step: one op whose launches run back to back on the
    stream the first one takes (`then` hands each result on without waiting)."""
    n = x.shape[0]
    outs = [api.empty([n], f32).partition([tile]) for _ in steps]
    a, b = steps[0]
    op = affine(outs[0], x, a, b)
    for out, (a, b) in zip(outs[1:], steps[1:], strict=True):
        op = op.then(lambda z, _x, _a, _b, out=out, a=a, b=b: affine(out, z.unpartition(), a, b))
    return op


def main(n: int = 1 << 22, tile: int = 1024, length: int = 8) -> None:
    rng = np.random.default_rng(5)
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    left_steps = [(1.0 + 0.01 * i, 0.5) for i in range(length)]
    right_steps = [(0.9, -0.25 * i) for i in range(length)]
    out = api.empty([n], f32).partition([tile])
    left, right = cutile.Stream("left"), cutile.Stream("right")
    left_chain = chain(api.from_numpy(xs), left_steps, tile).on(left)
    right_chain = chain(api.from_numpy(ys), right_steps, tile).on(right)
    cutile.synchronize()  # the inputs are written: what follows is the chains and the join
    before = streams.stats()

    def join(lhs: tuple, rhs: tuple) -> cutile.DeviceOp:
        # runs on the right chain's stream; the left result is still being written on the
        # other stream: the launch waits on its event
        return blend(out, lhs[0].unpartition(), rhs[0].unpartition())

    z, _, _ = cutile.zip(left_chain, right_chain).then(join).sync()
    waits = streams.stats()["stream_waits"] - before["stream_waits"]

    def reference(v: np.ndarray, steps: list[tuple[float, float]]) -> np.ndarray:
        for a, b in steps:
            v = (v * np.float32(a) + np.float32(b)).astype(np.float32)
        return v

    quarter, three_quarters = np.float32(0.25), np.float32(0.75)
    want = reference(xs, left_steps) * quarter + reference(ys, right_steps) * three_quarters
    got = z.unpartition().to_numpy()
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    tol = 1e-5 * (np.abs(want.astype(np.float64)) + 1)
    assert (err <= tol).all(), f"{int((err > tol).sum())} wrong elements"
    assert waits >= 1, "the join did not wait for the other stream"
    print(f"streams: two chains of {length} ops on `left` and `right` and a join, "
          f"{n} elements: all match numpy; the join waited on {waits} event(s)")


if __name__ == "__main__":
    main()
