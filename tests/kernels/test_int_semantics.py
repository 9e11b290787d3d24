"""What the language's integer operators and conversions compute, pinned on the active
backend against exact Python integers: every kernel of `tests/gpu/int_semantics_ops.py`
(the GPU differential test runs the same ones on both backends), and the kernels that
tileiras compiled to a lone EXIT while Tile IR's undefined cases reached it (shifts by the
width or more, float -> int of NaN, infinities or values out of range)."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
import pytest

import cutile
from cutile.core import Mut, Tensor, f16, f32, full, i32, u32, where
from cutile.dtypes import DType
from tests.gpu import int_semantics_ops as ops


@cache
def results() -> dict[str, np.ndarray]:
    return ops.run_all()


def _ints(a: np.ndarray) -> list[int]:
    return [int(v) for v in a]


def _wrap(v: int, d: DType) -> int:
    v &= (1 << d.bits) - 1
    return v - (1 << d.bits) if not d.unsigned and v >= 1 << (d.bits - 1) else v


def _floordiv(a: int, b: int, d: DType) -> int:
    if b == 0:
        return a  # a zero divisor reads as 1
    return _wrap(a // b, d)  # (MIN // -1 wraps to MIN)


def _mod(a: int, b: int) -> int:
    return 0 if b == 0 else a % b


def _shl(a: int, s: int, d: DType) -> int:
    return 0 if s >= d.bits else _wrap(a << s, d)


def _shr(a: int, s: int, d: DType) -> int:
    if d.unsigned:
        return 0 if s >= d.bits else a >> s
    return a >> min(s, d.bits - 1)  # past the width: the sign bits


def _cmp(a: int, b: int) -> int:
    return (a < b) + 2 * (a <= b) + 4 * (a == b) + 8 * (a < b and a != b)


REFERENCE: dict[str, Any] = {
    "add": lambda a, b, d: _wrap(a + b, d),
    "sub": lambda a, b, d: _wrap(a - b, d),
    "mul": lambda a, b, d: _wrap(a * b, d),
    "floordiv": _floordiv,
    "mod": lambda a, b, d: _mod(a, b),
    "max": lambda a, b, d: max(a, b),
    "min": lambda a, b, d: min(a, b),
    "cmp": lambda a, b, d: _cmp(a, b),
    "neg": lambda a, b, d: _wrap(-a, d),
    "abs": lambda a, b, d: a if d.unsigned else _wrap(abs(a), d),
    "pow": lambda a, b, d: _wrap(a**3 + b ** (b & 7), d),
}


@pytest.mark.parametrize("name", list(ops.INTS))
@pytest.mark.parametrize("op", list(REFERENCE))
def test_integer_operators(name: str, op: str) -> None:
    d, v = ops.INTS[name], ops.inputs()
    x, y = _ints(v[f"x_{name}"]), _ints(v[f"y_{name}"])
    want = [REFERENCE[op](a, b, d) for a, b in zip(x, y, strict=True)]
    assert _ints(results()[f"{op}_{name}"]) == want


@pytest.mark.parametrize("name", list(ops.INTS))
def test_shifts_by_every_amount(name: str) -> None:
    # the amount reads as unsigned: a "negative" one is past the width too
    d, v = ops.INTS[name], ops.inputs()
    x = _ints(v[f"x_{name}"])
    s = [a & ((1 << d.bits) - 1) for a in _ints(v[f"s_{name}"])]
    r = results()
    assert _ints(r[f"shl_{name}"]) == [_shl(a, n, d) for a, n in zip(x, s, strict=True)]
    assert _ints(r[f"shr_{name}"]) == [_shr(a, n, d) for a, n in zip(x, s, strict=True)]
    assert _ints(r[f"shl_c_{name}"]) == [0] * len(x)
    assert _ints(r[f"shr_c_{name}"]) == [_shr(a, d.bits + 1, d) for a in x]


@pytest.mark.parametrize("name", list(ops.INTS))
def test_integer_casts_wrap_and_extend(name: str) -> None:
    x, r = _ints(ops.inputs()[f"x_{name}"]), results()
    for to in ("i64", "u64", "i8", "u16"):
        assert _ints(r[f"to_{to}_{name}"]) == [_wrap(a, ops.INTS[to]) for a in x], to


def _source_values(f: str) -> np.ndarray:
    """The f64 inputs as the source float type holds them (rounded on the host)."""
    vals = ops.inputs()["f"]
    if f == "bf16":
        import ml_dtypes

        return vals.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    with np.errstate(over="ignore"):
        return vals.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[f]
                           ).astype(np.float64)


@pytest.mark.parametrize("f", list(ops.FLOATS))
@pytest.mark.parametrize("name", list(ops.INTS))
def test_float_to_int_truncates_saturates_and_takes_nan_to_zero(f: str, name: str) -> None:
    d = ops.INTS[name]
    lo, hi = (0, 2**d.bits - 1) if d.unsigned else (-(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1)

    def want(x: float) -> int:
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return hi if x > 0 else lo
        return min(max(math.trunc(x), lo), hi)

    got = _ints(results()[f"{f}_to_{name}"])
    assert got == [want(x) for x in _source_values(f)]


def round_to_bits(n: int, bits: int) -> int:
    """`n` rounded to `bits` significant bits, to nearest, ties to even."""
    m, drop = abs(n), max(abs(n).bit_length() - bits, 0)
    q, r = divmod(m, 1 << drop)
    half = (1 << drop) >> 1
    if drop and (r > half or (r == half and q & 1)):
        q += 1
    return (q << drop) * (-1 if n < 0 else 1)


def _float_bits(n: int, f: str) -> int:
    """The bits of the integer `n` rounded once to float type `f`."""
    if f == "f64":
        return int(np.array(float(n)).view(np.uint64))
    sig = {"f32": 24, "f16": 11, "bf16": 8}[f]
    r = float(round_to_bits(n, sig))
    if f == "f16":
        return int(np.array(r if abs(r) <= 65504 else math.copysign(math.inf, r),
                            np.float16).view(np.uint16))
    bits32 = int(np.array(r, np.float32).view(np.uint32))
    return bits32 >> 16 if f == "bf16" else bits32


@pytest.mark.parametrize("f", list(ops.FLOATS))
@pytest.mark.parametrize("name", ["i32", "u32", "i64", "u64"])
def test_int_to_float_rounds_once_to_nearest_even(name: str, f: str) -> None:
    got = results()[f"{name}_to_{f}"]
    width = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}[f]
    want = [_float_bits(n, f) for n in _ints(ops.inputs()[f"r_{name}"])]
    assert _ints(np.asarray(got).view(width)) == want


# -- the kernels tileiras compiled to nothing ------------------------------------------------


@cutile.entry
def shift_by_40(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), (full((), 1, i32) << 40,)))


@cutile.entry
def shift_by_a_device_35(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), ((full((), 8, u32) >> full((), 35, u32)).astype(i32),)))


@cutile.entry
def convert_3e9(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), (full((), 3e9, f32).astype(i32) - (2**31 - 1),)))


@cutile.entry
def convert_nan_to_u8(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), (full((), float("nan"), f32).astype(u32).astype(i32),)))


@cutile.entry
def convert_f16_infinity(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]]):
    z.store(x.load_tile((4,), (full((), float("inf"), f16).astype(i32) - (2**31 - 1),)))


ONCE_UNDEFINED = [shift_by_40, shift_by_a_device_35, convert_3e9, convert_nan_to_u8,
                  convert_f16_infinity]


@pytest.mark.parametrize("kernel", ONCE_UNDEFINED, ids=lambda k: k.name)
def test_the_once_undefined_kernels_store_tile_zero(kernel: cutile.EntryKernel) -> None:
    from cutile import api

    x = api.from_numpy(np.arange(16, dtype=np.int32) + 100)
    z, _ = kernel(api.full([4], -1, i32).partition([4]), x).sync()
    assert z.unpartition().to_numpy().tolist() == [100, 101, 102, 103]


def assert_store_kept(kernel: cutile.EntryKernel) -> None:
    """The sm_90 cubin is more than a lone exit and still stores (tileiras drops the store,
    and the bounds check before it, from a kernel it finds undefined)."""
    code = sass_instructions(kernel.compile("sm_90").cubin)
    assert len(code) > 10, code
    assert any(ins.startswith(("STG", "UTMASTG", "ST.")) for ins in code), code


def sass_instructions(cubin: bytes) -> list[str]:
    """The cubin's SASS instructions, without NOPs and with any predicate (`@P0 `) cut."""
    from cutile.dump import sass

    text = sass(cubin)
    if text is None:
        pytest.skip("cuobjdump is not installed")
    lines = [ln.split(";")[0].split("*/")[-1].strip() for ln in text.splitlines()
             if ln.strip().startswith("/*") and ";" in ln]
    return [ln.split(" ", 1)[1] if ln.startswith("@") else ln for ln in lines
            if ln and ln != "NOP"]


@pytest.mark.tileiras
@pytest.mark.parametrize("kernel", ONCE_UNDEFINED, ids=lambda k: k.name)
def test_tileiras_keeps_the_store_and_its_bounds_check(kernel: cutile.EntryKernel) -> None:
    # Before the lowering defined these cases, each cubin was `LDC; EXIT; BRA`: tileiras
    # had found undefined behaviour and dropped the device bounds check and the store
    assert_store_kept(kernel)


@cutile.entry
def bool_compares(z: Mut[Tensor[i32, [8]]], x: Tensor[i32, [-1]], y: Tensor[i32, [-1]]):
    a = x.load_tile((8,), (0,)) > 0
    b = y.load_tile((8,), (0,)) > 0
    z.store(where(a > b, 1, 0) + where(a <= b, 2, 0) + where(a == 2, 4, 0)
            + where(a != b, 8, 0) + where(a == (x.load_tile((8,), (0,)) - 1), 16, 0))


def test_bool_tiles_compare_as_zero_and_one() -> None:
    # `cmpi` takes no i1 (these were CT9002, an invalid-IR compiler error), and the constant
    # 2 met a bool tile as `True` (`mask == 2` was `mask`)
    from cutile import api

    xs = np.array([1, 0, 1, 0, 2, -3, 1, 0], np.int32)
    ys = np.array([0, 1, 1, 0, 5, 0, -1, 7], np.int32)
    z, _, _ = bool_compares(api.zeros([8], i32).partition([8]), api.from_numpy(xs),
                            api.from_numpy(ys)).sync()
    a, b = xs > 0, ys > 0
    want = ((a > b) * 1 + (a <= b) * 2 + (a == 2) * 4 + (a != b) * 8
            + (a.astype(np.int32) == xs - 1) * 16)
    assert z.unpartition().to_numpy().tolist() == want.tolist()
