"""The kernels of the GPU-vs-interpreter differential test (`test_differential_ops.py`):
every elementwise, conversion, reduction and scan op on random inputs with the awkward
values mixed in (NaN, ±inf, ±0, subnormals, huge values) and a ragged last tile.

`python -m tests.gpu.differential_ops OUT.npz` runs every kernel on the active backend
(`CUTILE_BACKEND=gpu` or `interpreter`) and saves each result; the test runs it once per
backend and compares the two files op by op.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    atan2,
    bf16,
    ceil,
    cos,
    cosh,
    cumsum,
    exp,
    exp2,
    f16,
    f32,
    floor,
    fma,
    i8,
    i32,
    isnan,
    load_tile_like,
    log,
    log2,
    maximum,
    minimum,
    rsqrt,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    truediv,
    where,
)

N = 1000          # not a multiple of the tile: the last tile is ragged
TILE = 128


def _unary(fn: Any) -> cutile.EntryKernel:
    @cutile.entry
    def unary(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(fn(load_tile_like(x, z)))

    return unary


UNARY = {name: _unary(fn) for name, fn in {
    "exp": exp, "exp2": exp2, "log": log, "log2": log2, "sqrt": sqrt, "rsqrt": rsqrt,
    "sin": sin, "cos": cos, "tan": tan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
    "floor": floor, "ceil": ceil,
}.items()}


@cutile.entry
def absolute(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(abs(-load_tile_like(x, z)))


@cutile.entry
def exp2_ftz(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(exp2(load_tile_like(x, z), flush_to_zero=True))


@cutile.entry
def arith(add: Mut[Tensor[f32, ["B"]]], sub: Mut[Tensor[f32, ["B"]]],
          mul: Mut[Tensor[f32, ["B"]]], div: Mut[Tensor[f32, ["B"]]],
          x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    a = load_tile_like(x, add)
    b = load_tile_like(y, add)
    add.store(a + b)
    sub.store(a - b)
    mul.store(a * b)
    div.store(a / b)


@cutile.entry
def arith2(mx: Mut[Tensor[f32, ["B"]]], mn: Mut[Tensor[f32, ["B"]]],
           fd: Mut[Tensor[f32, ["B"]]], md: Mut[Tensor[f32, ["B"]]],
           x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    a = load_tile_like(x, mx)
    b = load_tile_like(y, mx)
    mx.store(maximum(a, b))
    mn.store(minimum(a, b))
    fd.store(a // b)
    md.store(a % b)


@cutile.entry
def arith3(at: Mut[Tensor[f32, ["B"]]], fm: Mut[Tensor[f32, ["B"]]],
           ap: Mut[Tensor[f32, ["B"]]], sel: Mut[Tensor[f32, ["B"]]],
           x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    a = load_tile_like(x, at)
    b = load_tile_like(y, at)
    at.store(atan2(a, b))
    fm.store(fma(a, b, a))
    ap.store(truediv(a, b, rounding="approx"))
    sel.store(where(isnan(a) | (a > b), b, a))


@cutile.entry
def conversions(h: Mut[Tensor[f16, ["B"]]], b: Mut[Tensor[bf16, ["B"]]],
                i: Mut[Tensor[i32, ["B"]]], c: Mut[Tensor[i8, ["B"]]],
                x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, h)
    h.store(t.astype(f16))
    b.store(t.astype(bf16))
    i.store(t.astype(i32))
    c.store(t.astype(i8))


@cutile.entry
def integers(q: Mut[Tensor[i32, ["B"]]], r: Mut[Tensor[i32, ["B"]]],
             bits: Mut[Tensor[i32, ["B"]]], f: Mut[Tensor[f32, ["B"]]],
             x: Tensor[i32, [-1]], y: Tensor[i32, [-1]], B: Const[int]):
    a = load_tile_like(x, q)
    d = load_tile_like(y, q)
    q.store(a // d)
    r.store(a % d)
    bits.store((a & d) ^ (a | 7) + (a << 3) - (a >> 2))
    f.store(a.astype(f32) * 0.5)


@cutile.entry
def shifts(shl: Mut[Tensor[i32, ["B"]]], shr: Mut[Tensor[i32, ["B"]]],
           shl_c: Mut[Tensor[i32, ["B"]]], x: Tensor[i32, [-1]], s: Tensor[i32, [-1]],
           B: Const[int]):
    # amounts past the width and below 0 among them: what the device does there is what
    # the interpreter must do
    a = load_tile_like(x, shl)
    n = load_tile_like(s, shl)
    shl.store(a << n)
    shr.store(a >> n)
    shl_c.store(a << 33)


@cutile.entry
def rows(s: Mut[Tensor[f32, [1, "B"]]], m: Mut[Tensor[f32, [1, "B"]]],
         c: Mut[Tensor[f32, [1, "B"]]], x: Tensor[f32, [-1, -1]], B: Const[int]):
    t = load_tile_like(x, s)
    s.store(t * 0.0 + t.sum(axis=1, keepdims=True))
    m.store(t * 0.0 + t.max(axis=1, keepdims=True))
    c.store(cumsum(t, axis=1))


def inputs(seed: int = 11) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(N) * rng.choice([0.01, 1.0, 30.0, 1e4], N)).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, 1e38, -1e38,
                         0.5, -0.5, 1.5, 2.5, 126.9, -127.9, 3e9], np.float32)
    x[: len(specials)] = specials
    y = (rng.standard_normal(N) * 3).astype(np.float32)
    y[5:9] = [0.0, -0.0, np.inf, np.nan]
    xi = rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int64).astype(np.int32)
    yi = rng.integers(-50, 50, N).astype(np.int32)
    yi[::13] = 0
    yi[1] = -1
    xi[1] = np.iinfo(np.int32).min
    rows_x = (rng.standard_normal((8, 200)) * 10).astype(np.float32)
    si = rng.integers(-3, 41, N).astype(np.int32)
    si[:8] = [0, 1, 31, 32, 33, 63, -1, -2**31]
    return {"x": x, "y": y, "xi": xi, "yi": yi, "rows": rows_x, "si": si}


def _out(dtype: Any, shape: list[int], tile: list[int]) -> Any:
    return api.full(shape, 0, dtype).partition(tile)


def run_all() -> dict[str, np.ndarray]:
    v = inputs()
    x, y = api.from_numpy(v["x"]), api.from_numpy(v["y"])
    res: dict[str, np.ndarray] = {}

    def keep(names: list[str], outs: tuple[Any, ...]) -> None:
        for n, o in zip(names, outs, strict=False):
            res[n] = o.unpartition().to_numpy()

    for name, k in UNARY.items():
        z, x = k(_out(f32, [N], [TILE]), x).sync()
        res[name] = z.unpartition().to_numpy()
    z, x = absolute(_out(f32, [N], [TILE]), x).sync()
    res["abs_neg"] = z.unpartition().to_numpy()
    z, x = exp2_ftz(_out(f32, [N], [TILE]), x).sync()
    res["exp2_ftz"] = z.unpartition().to_numpy()
    runs: list[tuple[list[str], Callable[..., Any], list[Any], list[Any]]] = [
        (["add", "sub", "mul", "div"], arith, [f32] * 4, [x, y]),
        (["maximum", "minimum", "floordiv_f", "mod_f"], arith2, [f32] * 4, [x, y]),
        (["atan2", "fma", "div_approx", "where_isnan"], arith3, [f32] * 4, [x, y]),
    ]
    for names, k, dts, args in runs:
        *outs, x, y = k(*(_out(d, [N], [TILE]) for d in dts), *args).sync()
        keep(names, tuple(outs))
    *outs, x = conversions(*(_out(d, [N], [TILE]) for d in (f16, bf16, i32, i8)), x).sync()
    keep(["to_f16", "to_bf16", "to_i32", "to_i8"], tuple(outs))
    xi, yi = api.from_numpy(v["xi"]), api.from_numpy(v["yi"])
    *outs, _, _ = integers(*(_out(d, [N], [TILE]) for d in (i32, i32, i32, f32)), xi,
                           yi).sync()
    keep(["floordiv_i", "mod_i", "bits_i", "itof"], tuple(outs))
    si = api.from_numpy(v["si"])
    *outs, _, _ = shifts(*(_out(i32, [N], [TILE]) for _ in range(3)), xi, si).sync()
    keep(["shl_i", "shr_i", "shl_33_i"], tuple(outs))
    r = api.from_numpy(v["rows"])
    *outs, _ = rows(*(_out(f32, [8, 200], [1, 256]) for _ in range(3)), r).sync()
    keep(["row_sum", "row_max", "row_cumsum"], tuple(outs))
    return res


if __name__ == "__main__":
    np.savez(sys.argv[1], **run_all())
