"""Interop: a cutile kernel on torch tensors, zero-copy both ways, checked against torch.

    python examples/interop_torch.py

The inputs are torch tensors passed to the kernel as they are (one a transposed view): a
kernel call imports another library's tensors for its read-only parameters itself, shared
(cutile never writes them) and stream-ordered after torch's pending work. The output is a
torch tensor the caller hands over through the one unsafe import,
`cutile.unsafe.from_dlpack_exclusive`: the caller's promise that nothing else touches it
while cutile writes it. Results land in it in place; a cutile-allocated result goes back to
torch with `torch.from_dlpack`, again without a copy. With cupy installed (and a GPU), the
same runs on cupy arrays. Without torch, numpy arrays (on the interpreter) show the same
protocol. docs/interop.md explains the rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, exp, f32, load_tile_like
from cutile.runtime import driver


@cutile.entry
def gated(z: Mut[Tensor[f32, ["BM", "BN"]]],  # the output: each block writes its own tile
          x: Tensor[f32, [-1, -1]],           # read-only inputs: any strides
          g: Tensor[f32, [-1, -1]],
          BM: Const[int], BN: Const[int]):
    tx = load_tile_like(x, z)
    tg = load_tile_like(g, z)
    z.store(tx * tg / (1.0 + exp(-tg)))       # x * silu(g)


def _run(lib: str, x: Any, g: Any, z: Any, bm: int, bn: int) -> None:
    """`z = x * silu(g)` in place, for arrays of any DLPack library."""
    out = cutile.unsafe.from_dlpack_exclusive(z).partition([bm, bn])  # nothing else uses z
    gated(out, x, g).sync()  # x and g are imported shared by the call itself
    print(f"interop_torch: {lib}: {tuple(z.shape)} written in place by cutile")


def with_torch(torch: Any, m: int, n: int, bm: int, bn: int) -> None:
    device = "cuda" if driver.backend() == "gpu" else "cpu"
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(n, m, device=device, generator=gen).T  # a transposed view: strides (1, m)
    g = torch.randn(m, n, device=device, generator=gen)
    z = torch.full((m, n), float("nan"), device=device)  # poisoned: every element is written
    _run(f"torch ({device})", x, g, z, bm, bn)
    expected = x * torch.nn.functional.silu(g)
    torch.testing.assert_close(z, expected, rtol=1e-5, atol=1e-6)
    # A cutile tensor goes to torch without a copy, too.
    own = api.full([m, n], np.nan, f32).partition([bm, bn])
    own, _, _ = gated(own, x, g).sync()
    result = own.unpartition()
    as_torch = torch.from_dlpack(result)
    assert as_torch.data_ptr() == result.address
    torch.testing.assert_close(as_torch, expected, rtol=1e-5, atol=1e-6)
    print("interop_torch: torch.from_dlpack(cutile tensor) shares its memory; "
          "matches torch")


def with_cupy(cupy: Any, m: int, n: int, bm: int, bn: int) -> None:
    rng = cupy.random.default_rng(1)
    x = rng.standard_normal((m, n), dtype=cupy.float32)
    g = rng.standard_normal((m, n), dtype=cupy.float32)
    z = cupy.full((m, n), cupy.nan, dtype=cupy.float32)
    _run("cupy", x, g, z, bm, bn)
    expected = x * g / (1.0 + cupy.exp(-g))
    cupy.testing.assert_allclose(z, expected, rtol=1e-5, atol=1e-6)


def with_numpy(m: int, n: int, bm: int, bn: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, m), dtype=np.float32).T
    g = rng.standard_normal((m, n), dtype=np.float32)
    z = np.full((m, n), np.nan, np.float32)
    _run("numpy", x, g, z, bm, bn)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    np.testing.assert_allclose(z, x64 * g64 / (1.0 + np.exp(-g64)), rtol=1e-5, atol=1e-6)


def _optional(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        return None


def main(m: int = 1000, n: int = 768, bm: int = 64, bn: int = 128) -> None:
    on_gpu = driver.backend() == "gpu"
    torch = _optional("torch")
    if torch is not None and (not on_gpu or torch.cuda.is_available()):
        with_torch(torch, m, n, bm, bn)
    elif not on_gpu:
        print("interop_torch: note: torch is not installed; numpy arrays show the same "
              "protocol (DLPack) on the interpreter")
        with_numpy(m, n, bm, bn)
    else:
        print("interop_torch: note: no CUDA-enabled torch; nothing to exchange with torch")
    cupy = _optional("cupy") if on_gpu else None
    if cupy is not None:
        with_cupy(cupy, m, n, bm, bn)


if __name__ == "__main__":
    main()
