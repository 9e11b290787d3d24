"""How Tile IR element types live in numpy arrays, and the rounding that keeps them exact.

Storage (the numpy dtype of a tile of that element type):

  i1 -> bool;  i8/i16/i32/i64 -> int8..int64 (two's complement bits; Tile IR integers are
  signless, so ops that care reinterpret them through `signed`/`unsigned` below);
  f16 -> float16;  f32 -> float32;  f64 -> float64;
  bf16 -> float32 holding only values exactly representable in bf16 (round-through-f32
  emulation: every op that produces bf16 rounds its f32 result to bf16, nearest-even);
  tf32 -> float32 holding only values with at most 10 mantissa bits (same scheme);
  f8e4m3fn/f8e5m2 -> uint8 bit patterns (Tile IR has no arithmetic on them: conversions
  decode them, `mmaf` multiplies their values; every other op moves bits, NaNs included);
  u8/u16/u32/u64 -> int8..int64 like i8..i64 (the same signless Tile IR integers: only
  the host sees the difference);
  ptr<T> -> int64 addresses in the interpreter's address space (see memory.py).

No ml_dtypes dependency: bf16 bits are the upper half of an f32, so the emulation is bit-exact,
and f8 rounding is `cutile.minifloat`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import minifloat
from ..dtypes import DType
from ..ir.types import PointerType, TileType

Array = npt.NDArray[Any]

_STORAGE: dict[str, np.dtype[Any]] = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(np.float32),
    "f32": np.dtype(np.float32),
    "tf32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "u8": np.dtype(np.int8),
    "u16": np.dtype(np.int16),
    "u32": np.dtype(np.int32),
    "u64": np.dtype(np.int64),
    "f8e4m3fn": np.dtype(np.uint8),
    "f8e5m2": np.dtype(np.uint8),
}
_UNSIGNED: dict[str, np.dtype[Any]] = {
    "i1": np.dtype(np.uint8),
    "i8": np.dtype(np.uint8),
    "i16": np.dtype(np.uint16),
    "i32": np.dtype(np.uint32),
    "i64": np.dtype(np.uint64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
}
# The dtype of one element as it sits in memory (bytes of a buffer).
_MEMORY: dict[str, np.dtype[Any]] = {
    **_STORAGE,
    "i1": np.dtype(np.uint8),
    "bf16": np.dtype(np.uint16),
}
PTR_STORAGE = np.dtype(np.int64)


def storage(d: DType) -> np.dtype[Any]:
    try:
        return _STORAGE[d.name]
    except KeyError:
        raise TypeError(f"the interpreter has no storage for `{d.name}`") from None


def element_storage(elem: DType | PointerType) -> np.dtype[Any]:
    return PTR_STORAGE if isinstance(elem, PointerType) else storage(elem)


def memory_dtype(d: DType) -> np.dtype[Any]:
    return _MEMORY[d.name]


def unsigned_dtype(d: DType) -> np.dtype[Any]:
    return _UNSIGNED[d.name]


def signed_dtype(d: DType) -> np.dtype[Any]:
    return np.dtype(np.int8) if d.name == "i1" else _STORAGE[d.name]


def compute_float(d: DType) -> np.dtype[Any]:
    """Floats narrower than f32 compute in f32 (as the spec emulates them); f64 in f64."""
    return np.dtype(np.float64) if d.name == "f64" else np.dtype(np.float32)


def freeze(a: Array) -> Array:
    """Tiles are immutable values: a handler that writes into one by mistake fails loudly."""
    a.flags.writeable = False
    return a


# -- integers ------------------------------------------------------------------------------


def signed(x: Array, d: DType) -> Array:
    """The two's complement value of each element (i1: true is -1)."""
    if d.name == "i1":
        return -(x.astype(np.int8))
    return x


def unsigned(x: Array, d: DType) -> Array:
    """The unsigned value of each element, as the same-width unsigned numpy dtype."""
    if d.name == "i1":
        return x.astype(np.uint8)
    return x.view(_UNSIGNED[d.name])


def wrap_int(x: Array, d: DType) -> Array:
    """Wrap any integer array (signed or unsigned, any width) to `d`'s bits, as storage."""
    if d.name == "i1":
        return (np.asarray(x) & 1).astype(np.bool_)
    return np.asarray(x).astype(_UNSIGNED[d.name]).view(_STORAGE[d.name])


def int_from_python(value: int, d: DType) -> Array:
    """A Python int in [-2^(n-1), 2^n) wrapped to an n-bit signless integer."""
    bits = d.bits
    if not -(1 << (bits - 1)) <= value < (1 << bits) and not (bits == 1 and value in (0, 1)):
        raise OverflowError(f"{value} does not fit in `{d.name}`")
    v = value & ((1 << bits) - 1)
    if d.name == "i1":
        return np.array(bool(v))
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return np.array(v, dtype=_STORAGE[d.name])


# -- floats --------------------------------------------------------------------------------


def _round_f32_bits(x: Array, drop: int) -> Array:
    """Round float32 values to nearest-even keeping (23 - drop) mantissa bits; NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    half = np.uint64((1 << (drop - 1)) - 1)
    lsb = (bits >> np.uint64(drop)) & np.uint64(1)
    rounded = ((bits + half + lsb) & np.uint64(0xFFFFFFFF & ~((1 << drop) - 1))).astype(np.uint32)
    out = rounded.view(np.float32)
    nan = np.isnan(x)
    if nan.any():
        out = np.where(nan, np.float32(np.nan), out)
    return np.asarray(out, dtype=np.float32)


def _to_f32_round_to_odd(x: Array) -> Array:
    """f64 -> f32 rounding to odd: a second rounding to a narrower format is then correct."""
    t = x.astype(np.float32)
    t64 = t.astype(np.float64)
    over = np.abs(t64) > np.abs(x)
    if over.any():
        t = np.where(over, np.nextafter(t, np.float32(0)), t)
    inexact = t.astype(np.float64) != x
    inexact &= np.isfinite(x)
    if inexact.any():
        bits = t.view(np.uint32).copy()
        bits[inexact] |= np.uint32(1)
        t = bits.view(np.float32)
    return np.asarray(t, dtype=np.float32)


def to_float(x: Array | float, d: DType) -> Array:
    """Round float values (any numpy float dtype) to `d`, nearest-even, as storage (f8:
    saturating, as bit patterns)."""
    a = np.asarray(x)
    name = d.name
    if minifloat.is_minifloat(name):
        return minifloat.to_bits(a, name)
    if name == "f64":
        return a.astype(np.float64)
    if name == "f32":
        return a.astype(np.float32)
    if name == "f16":
        return a.astype(np.float16)
    if name in ("bf16", "tf32"):
        if a.dtype == np.float64:
            a32 = _to_f32_round_to_odd(a)
        else:
            a32 = a.astype(np.float32)
        return _round_f32_bits(a32, 16 if name == "bf16" else 13)
    raise TypeError(f"`{name}` is not a float type the interpreter supports")


def _ulp_step(s: Array, d: DType, up: Array) -> Array:
    """Move each value one representable step toward +inf (where `up`) or -inf."""
    if d.name in ("f16", "f32", "f64"):
        dt = storage(d)
        target = np.where(up, dt.type(np.inf), dt.type(-np.inf))
        return np.asarray(np.nextafter(s, target), dtype=dt)
    unit = np.uint32(1 << (16 if d.name == "bf16" else 13))
    bits = s.astype(np.float32).view(np.uint32).copy()
    neg = np.signbit(s)
    zero = s == 0
    grow = (up & ~neg) | (~up & neg)  # magnitude grows
    bits = np.where(grow, bits + unit, bits - unit)
    bits = np.where(zero, np.where(up, unit, np.uint32(0x80000000) | unit), bits)
    return bits.astype(np.uint32).view(np.float32)


def round_directed(r: Array, d: DType, mode: str) -> Array:
    """Round an f64 result to `d` with a directed rounding mode.

    Exact when the f64 value is the exact result (products of f32s, all f16/bf16 ops) and
    correct whenever the f64 rounding did not land exactly on a value representable in `d`.
    For f64 results the f64 value is returned as is (nearest-even): an approximation."""
    r = np.asarray(r, dtype=np.float64)
    s = to_float(r, d)
    if d.name == "f64" or mode in ("nearest_even", "approx", "full"):
        return s
    s64 = s.astype(np.float64)
    if mode == "zero":
        move = np.abs(s64) > np.abs(r)
        up = s64 < 0
    elif mode == "negative_inf":
        move = s64 > r
        up = np.zeros(r.shape, dtype=bool)
    elif mode == "positive_inf":
        move = s64 < r
        up = np.ones(r.shape, dtype=bool)
    else:
        raise ValueError(f"unknown rounding mode `{mode}`")
    move &= ~np.isnan(r)
    if not move.any():
        return s
    stepped = _ulp_step(s, d, up)
    return np.asarray(np.where(move, stepped, s), dtype=storage(d))


_F32_TINY = np.float32(np.finfo(np.float32).tiny)


def flush_subnormals(x: Array) -> Array:
    """Flush f32 subnormals to sign-preserving zero (the `flush_to_zero` modifier)."""
    sub = (np.abs(x) < _F32_TINY) & (x != 0)
    if not sub.any():
        return x
    return np.asarray(np.where(sub, np.copysign(np.float32(0), x), x), dtype=x.dtype)


# -- bits ------------------------------------------------------------------------------------


def float_values(x: Array, d: DType) -> Array:
    """The values of a float tile's storage (f8 bit patterns decode to float32)."""
    if d.is_f8:
        return minifloat.from_bits(x, d.name)
    return np.asarray(x)


def float_bits(x: Array, d: DType) -> Array:
    """The memory bit pattern of float values, as the same-width unsigned dtype."""
    if d.is_f8:
        return np.asarray(x, dtype=np.uint8)
    if d.name == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return x.astype(storage(d)).view(_UNSIGNED_FOR_FLOAT[d.name])


def float_from_bits(bits: Array, d: DType) -> Array:
    if d.is_f8:
        return np.asarray(bits).astype(np.uint8)
    if d.name == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    out = bits.astype(_UNSIGNED_FOR_FLOAT[d.name]).view(storage(d))
    if d.name == "tf32":
        out = _round_f32_bits(out, 13)
    return out


_UNSIGNED_FOR_FLOAT: dict[str, np.dtype[Any]] = {
    "f16": np.dtype(np.uint16),
    "bf16": np.dtype(np.uint16),
    "f32": np.dtype(np.uint32),
    "tf32": np.dtype(np.uint32),
    "f64": np.dtype(np.uint64),
}


# -- memory encoding ---------------------------------------------------------------------


def decode(raw: Array, d: DType) -> Array:
    """Elements read from memory (in `memory_dtype(d)`) -> storage. Always a fresh array."""
    if d.name == "i1":
        return np.asarray(raw != 0)
    if d.name == "bf16":
        return np.asarray((raw.astype(np.uint32) << np.uint32(16)).view(np.float32))
    if d.name == "tf32":
        return _round_f32_bits(np.array(raw, dtype=np.float32), 13)
    return np.array(raw, dtype=storage(d))


def encode(x: Array, d: DType) -> Array:
    """Storage -> elements as they sit in memory (`memory_dtype(d)`)."""
    if d.name == "i1":
        return x.astype(np.uint8)
    if d.name == "bf16":
        return float_bits(x, d)
    return x.astype(storage(d))


# -- special values --------------------------------------------------------------------------

# Loads past a tensor's end through a view without padding, and masked-off pointer loads
# without a padding value, are unspecified in Tile IR. The interpreter fills them with a
# poison value so that a kernel that relies on them gives visibly wrong answers.
INT_POISON_BYTE = 0xA5


def poison(d: DType) -> Any:
    if d.is_float:
        return np.nan
    if d.name == "i1":
        return True
    pattern = int.from_bytes(bytes([INT_POISON_BYTE]) * d.itemsize, "little")
    return int(np.array(pattern, dtype=_UNSIGNED[d.name]).view(_STORAGE[d.name]))


_PADDING: dict[str, float] = {
    "zero": 0.0,
    "neg_zero": -0.0,
    "nan": np.nan,
    "pos_inf": np.inf,
    "neg_inf": -np.inf,
}


def padding_value(name: str | None, d: DType) -> Any:
    """The fill value of a partition view's `padding_value` (None: poison)."""
    if name is None:
        return poison(d)
    if name not in _PADDING:
        raise ValueError(f"unknown padding value `{name}`")
    if not d.is_float:
        if name != "zero":
            raise ValueError(f"padding `{name}` needs a float element type, not `{d.name}`")
        return False if d.name == "i1" else 0
    return _PADDING[name]


def full(shape: tuple[int, ...], value: Any, d: DType) -> Array:
    if d.is_float:
        return to_float(np.full(shape, value, dtype=np.float64), d)
    return np.full(shape, value, dtype=storage(d))


# -- arguments and constants ---------------------------------------------------------------


def from_host(value: Any, ty: TileType) -> Array:
    """A Python/numpy value (scalar or array) as a tile of type `ty`."""
    elem = ty.element
    if isinstance(elem, PointerType):
        raise TypeError("pointer tiles are not built from host values")
    a = np.asarray(value)
    if elem.is_float:
        out = to_float(a.astype(np.float64) if a.dtype.kind != "f" else a, elem)
    elif elem.name == "i1":
        out = np.asarray(a != 0) if a.dtype != np.bool_ else a.copy()
    elif a.dtype.kind in "iub":
        if a.ndim == 0:
            out = int_from_python(int(a), elem)
        else:
            out = wrap_int(a.astype(np.int64) if a.dtype.kind == "b" else a, elem)
    else:
        raise TypeError(f"a `{a.dtype}` value cannot be a `{elem.name}` tile")
    if out.shape != ty.shape:
        out = np.broadcast_to(out, ty.shape).copy()
    return np.asarray(out)
