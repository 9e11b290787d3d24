"""Integer and conversion kernels whose every result the interpreter and the GPU must agree on
bit for bit (`test_int_semantics_gpu.py`), and whose interpreter results are pinned against
a reference of exact integers (`tests/kernels/test_int_semantics.py`).

Each integer type (i8..i64, u8..u64) runs wrapping `+ - *`, Python's `//` and `%` (a zero
divisor reads as 1, `MIN // -1` wraps), shifts by every amount (past the width and
"negative" ones among them, by a device amount and by a constant), `maximum`/`minimum`,
comparisons, `-`, `abs`, integer powers; conversions run every float type (f16, bf16, f32,
f64) to every integer type with NaN, infinities and values past each type's ends (the
language defines them: truncate, saturate, NaN to 0), and 64- and 32-bit integers to every
float type at the values a double rounding gets wrong.

`python -m tests.gpu.int_semantics_ops OUT.npz` runs every kernel on the active backend
(`CUTILE_BACKEND=gpu` or `interpreter`) and saves each result.
"""


import sys
from typing import Any

import numpy as np

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    bf16,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    load_tile_like,
    maximum,
    minimum,
    u8,
    u16,
    u32,
    u64,
    where,
)
from cutile.dtypes import DType

N = 1000          # not a multiple of the tile: the last tile is ragged
TILE = 128
INTS: dict[str, DType] = {"i8": i8, "i16": i16, "i32": i32, "i64": i64,
                          "u8": u8, "u16": u16, "u32": u32, "u64": u64}
FLOATS: dict[str, DType] = {"f16": f16, "bf16": bf16, "f32": f32, "f64": f64}


def _arith(D: DType) -> cutile.EntryKernel:
    @cutile.entry
    def arith(add: Mut[Tensor[D, ["B"]]], sub: Mut[Tensor[D, ["B"]]],
              mul: Mut[Tensor[D, ["B"]]], fdiv: Mut[Tensor[D, ["B"]]],
              mod: Mut[Tensor[D, ["B"]]], x: Tensor[D, [-1]], y: Tensor[D, [-1]],
              B: Const[int]):
        a = load_tile_like(x, add)
        b = load_tile_like(y, add)
        add.store(a + b)
        sub.store(a - b)
        mul.store(a * b)
        fdiv.store(a // b)
        mod.store(a % b)

    return arith


def _bits(D: DType, W: int) -> cutile.EntryKernel:
    @cutile.entry
    def bits(shl: Mut[Tensor[D, ["B"]]], shr: Mut[Tensor[D, ["B"]]],
             shl_c: Mut[Tensor[D, ["B"]]], shr_c: Mut[Tensor[D, ["B"]]],
             x: Tensor[D, [-1]], s: Tensor[D, [-1]], B: Const[int]):
        a = load_tile_like(x, shl)
        n = load_tile_like(s, shl)
        shl.store(a << n)
        shr.store(a >> n)
        shl_c.store(a << W)          # a constant amount of the width: every bit out
        shr_c.store(a >> (W + 1))

    return bits


def _compare(D: DType) -> cutile.EntryKernel:
    @cutile.entry
    def compare(mx: Mut[Tensor[D, ["B"]]], mn: Mut[Tensor[D, ["B"]]],
                cmp: Mut[Tensor[i32, ["B"]]], neg: Mut[Tensor[D, ["B"]]],
                ab: Mut[Tensor[D, ["B"]]], pw: Mut[Tensor[D, ["B"]]],
                x: Tensor[D, [-1]], y: Tensor[D, [-1]], B: Const[int]):
        a = load_tile_like(x, mx)
        b = load_tile_like(y, mx)
        mx.store(maximum(a, b))
        mn.store(minimum(a, b))
        lt, le, eq = a < b, a <= b, a == b
        cmp.store(where(lt, 1, 0) + where(le, 2, 0) + where(eq, 4, 0) + where(lt > eq, 8, 0))
        neg.store(-a)
        ab.store(abs(a))
        pw.store(a ** 3 + b ** (b & 7))

    return compare


def _to_int(F: DType, D: DType) -> cutile.EntryKernel:
    @cutile.entry
    def to_int(z: Mut[Tensor[D, ["B"]]], x: Tensor[F, [-1]], B: Const[int]):
        z.store(load_tile_like(x, z).astype(D))

    return to_int


def _to_float(D: DType, F: DType) -> cutile.EntryKernel:
    @cutile.entry
    def to_float(z: Mut[Tensor[F, ["B"]]], x: Tensor[D, [-1]], B: Const[int]):
        z.store(load_tile_like(x, z).astype(F))

    return to_float


def _casts(D: DType) -> cutile.EntryKernel:
    @cutile.entry
    def casts(w: Mut[Tensor[i64, ["B"]]], u: Mut[Tensor[u64, ["B"]]],
              n: Mut[Tensor[i8, ["B"]]], m: Mut[Tensor[u16, ["B"]]],
              x: Tensor[D, [-1]], B: Const[int]):
        a = load_tile_like(x, w)
        w.store(a.astype(i64))
        u.store(a.astype(u64))
        n.store(a.astype(i8))
        m.store(a.astype(u16))

    return casts


ARITH = {k: _arith(d) for k, d in INTS.items()}
BITS = {k: _bits(d, d.bits) for k, d in INTS.items()}
COMPARE = {k: _compare(d) for k, d in INTS.items()}
TO_INT = {(f, k): _to_int(fd, d) for f, fd in FLOATS.items() for k, d in INTS.items()}
TO_FLOAT = {(k, f): _to_float(INTS[k], fd) for k in ("i32", "u32", "i64", "u64")
            for f, fd in FLOATS.items()}
CASTS = {k: _casts(d) for k, d in INTS.items()}


def ints(name: str, rng: np.random.Generator) -> np.ndarray:
    """Random bits, a quarter of small values, and the type's ends first."""
    d = INTS[name]
    info = np.iinfo(d.numpy_name)
    x = rng.integers(info.min, info.max, N, dtype=np.int64 if info.min < 0 else np.uint64,
                     endpoint=True).astype(d.numpy_name)
    x[N // 2: N // 2 + N // 4] = _wrap(rng.integers(-40, 40, N // 4).tolist(), d)
    edges = [int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1, 0, 1, -1, 2,
             -2, 3]
    x[: len(edges)] = _wrap(edges, d)
    return x


def _wrap(values: list[int], d: DType) -> np.ndarray:
    """Python ints as `d`'s bits (two's complement)."""
    mask = (1 << d.bits) - 1
    u = np.array([v & mask for v in values], dtype=np.uint64)
    return u.astype(np.dtype(d.numpy_name).str.replace("i", "u")).view(d.numpy_name)


def floats(rng: np.random.Generator) -> np.ndarray:
    """f64 values: NaN, infinities, each integer type's ends and the values just past
    them, halves, random magnitudes up to 2^70."""
    edges: list[float] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5,
                          -1.5, 300.0, -300.0, 255.9, 256.0, 65504.0, 65535.5, 65536.0]
    for bits in (8, 16, 32, 64):
        for e in (2.0 ** (bits - 1), 2.0**bits):
            edges += [e, -e, e - 1, e + 1, e * (1 - 2**-24), e * (1 + 2**-23), -e - 2 ** (bits - 8)]
    out = rng.standard_normal(N) * 2.0 ** rng.integers(0, 70, N)
    out[: len(edges)] = edges
    return out


def rounding_ints(name: str, rng: np.random.Generator) -> np.ndarray:
    """Integers a double rounding (through f32 or f64) gets wrong: a tie of the narrow type
    plus one, random bits at every magnitude."""
    bits = INTS[name].bits
    lo = 0 if name.startswith("u") else -(2 ** (bits - 1))
    vals: list[int] = []
    for e in range(12, bits - (0 if name.startswith("u") else 1)):
        for keep in (8, 11, 24):  # bf16, f16, f32 significands
            if e > keep:
                tie = (1 << e) + (1 << (e - keep))
                vals += [tie + 1, tie, tie - 1, -(tie + 1), (1 << e) + (3 << (e - keep)) + 1]
    vals = [v for v in vals if lo <= v < lo + 2**bits]
    x = rng.integers(lo, lo + 2**bits - 1, N, dtype=np.uint64 if lo == 0 else np.int64,
                     endpoint=True)
    x >>= rng.integers(0, bits, N).astype(x.dtype)
    out = x.astype(INTS[name].numpy_name)
    out[: len(vals)] = _wrap(vals, INTS[name])
    return out


def inputs(seed: int = 17) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, d in INTS.items():
        out[f"x_{name}"] = ints(name, rng)
        y = ints(name, rng)[::-1].copy()
        y[::11] = 0
        if not d.unsigned:
            y[0] = -1  # MIN // -1 and MIN % -1 (x[0] is MIN)
        out[f"y_{name}"] = y
        s = rng.integers(-3, d.bits + 6, N)
        s[:8] = [0, 1, d.bits - 1, d.bits, d.bits + 1, -1, 2 * d.bits, -(2 ** (d.bits - 1))]
        out[f"s_{name}"] = _wrap(s.tolist(), d)
    out["f"] = floats(rng)
    for name in ("i32", "u32", "i64", "u64"):
        out[f"r_{name}"] = rounding_ints(name, rng)
    return out


def float_input(values: np.ndarray, f: str) -> Any:
    if f == "bf16":
        import ml_dtypes

        return api.from_numpy(values.astype(np.float32).astype(ml_dtypes.bfloat16))
    with np.errstate(over="ignore"):  # past f16's range: infinities, as meant
        return api.from_numpy(values.astype({"f16": np.float16, "f32": np.float32,
                                             "f64": np.float64}[f]))


def _out(d: DType) -> Any:
    return api.zeros([N], d).partition([TILE])


def _host(t: Any) -> np.ndarray:
    a = np.asarray(t.unpartition().to_numpy())
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def run_all() -> dict[str, np.ndarray]:
    v = inputs()
    res: dict[str, np.ndarray] = {}
    for name, d in INTS.items():
        x, y, s = (api.from_numpy(v[f"{k}_{name}"]) for k in "xys")
        *outs, x, y = ARITH[name](*(_out(d) for _ in range(5)), x, y).sync()
        for o, k in zip(outs, ("add", "sub", "mul", "floordiv", "mod"), strict=True):
            res[f"{k}_{name}"] = _host(o)
        *outs, x, s = BITS[name](*(_out(d) for _ in range(4)), x, s).sync()
        for o, k in zip(outs, ("shl", "shr", "shl_c", "shr_c"), strict=True):
            res[f"{k}_{name}"] = _host(o)
        *outs, x, y = COMPARE[name](_out(d), _out(d), _out(i32), _out(d), _out(d), _out(d),
                                    x, y).sync()
        for o, k in zip(outs, ("max", "min", "cmp", "neg", "abs", "pow"), strict=True):
            res[f"{k}_{name}"] = _host(o)
        *outs, x = CASTS[name](_out(i64), _out(u64), _out(i8), _out(u16), x).sync()
        for o, k in zip(outs, ("to_i64", "to_u64", "to_i8", "to_u16"), strict=True):
            res[f"{k}_{name}"] = _host(o)
    for f in FLOATS:
        fx = float_input(v["f"], f)
        for name, d in INTS.items():
            z, fx = TO_INT[(f, name)](_out(d), fx).sync()
            res[f"{f}_to_{name}"] = _host(z)
    for (name, f), k in TO_FLOAT.items():
        z, _ = k(_out(FLOATS[f]), api.from_numpy(v[f"r_{name}"])).sync()
        res[f"{name}_to_{f}"] = _host(z)
    return res


if __name__ == "__main__":
    np.savez(sys.argv[1], **run_all())
