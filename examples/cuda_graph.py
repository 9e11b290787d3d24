"""A layer stack captured once as a CUDA Graph and replayed with new inputs. The graph owns
every tensor it touches (weights, activations, input) for its whole life: they cannot be
used or freed behind its back, new inputs go in through its own input tensor
(`g.replay(x)` copies them in on the graph's stream), and `g.into_inner()` gives the
tensors back at the end. Every replay's output is checked against numpy.

    python examples/cuda_graph.py
"""

import time

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f16, f32, maximum, mma, num_tiles, zeros


@cutile.entry
def linear_relu(z: Mut[Tensor[f16, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]],
                w: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        a = x.load_tile((BM, BK), (block_id(0), k))
        b = w.load_tile((BK, BN), (k, block_id(1)))
        acc = mma(a, b, acc)
    z.store(maximum(acc, 0.0).astype(f16))


def forward(x: api.Tensor, weights: list[api.Tensor], acts: list[api.Partition],
            tiles: tuple[int, int, int]) -> api.Tensor:
    """Every layer once: `acts[i] = relu(input @ weights[i])`. Inside a capture each
    `.sync()` returns at once (the launch is recorded, in order)."""
    h = x
    for w, out in zip(weights, acts, strict=True):
        z, _, _ = linear_relu(out, h, w, BK=tiles[2]).sync()
        h = z.unpartition()
    return h


def reference(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    h = x.astype(np.float32)
    for w in weights:
        h = np.maximum(h @ w.astype(np.float32), 0).astype(np.float16).astype(np.float32)
    return h


def main(m: int = 256, d: int = 1024, layers: int = 8, replays: int = 20,
         tiles: tuple[int, int, int] = (64, 64, 64)) -> None:
    rng = np.random.default_rng(9)
    ws = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float16) for _ in range(layers)]
    weights = [api.from_numpy(w) for w in ws]
    x = api.zeros([m, d], f16)  # the graph's input tensor: replays copy new inputs into it
    acts = [api.empty([m, d], f16).partition([tiles[0], tiles[1]]) for _ in range(layers)]
    g = cutile.graph(forward, x, weights, acts, tiles)
    worst = 0.0
    last = np.empty(0)
    t0 = time.perf_counter()
    for _ in range(replays):
        xs = rng.standard_normal((m, d)).astype(np.float16)
        g.replay(xs)  # copy in, then every layer, enqueued on the graph's stream
        last = g.read(0)  # waits for the replay
        out = last.astype(np.float32)
        want = reference(xs, ws)
        err = np.abs(out - want).max() / max(np.abs(want).max(), 1e-6)
        assert err < 2e-2, f"relative error {err:.3g}"
        worst = max(worst, float(err))
    per_replay = (time.perf_counter() - t0) / replays
    launches = g.num_launches
    h = g.into_inner()  # every tensor (x, weights, acts) is the caller's again
    np.testing.assert_array_equal(h.to_numpy(), last)
    print(f"cuda_graph: {layers} layers of {m}x{d} @ {d}x{d}, {launches} launches per "
          f"replay, {replays} replays with new inputs (incl. checks {per_replay * 1e3:.1f} ms "
          f"each): max relative error {worst:.1e}")


if __name__ == "__main__":
    main()
