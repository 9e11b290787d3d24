"""Integer arithmetic (wrapping, signedness), shifts, comparisons and conversions."""

from __future__ import annotations

import numpy as np
import pytest

from cutile.dtypes import DType
from cutile.interpreter import InterpreterError

from .kit import dt, elementwise

RNG = np.random.default_rng(11)
N = 512
INTS = {"i8": dt.i8, "i16": dt.i16, "i32": dt.i32, "i64": dt.i64}


def ints(d: DType, n: int = N) -> np.ndarray:
    info = np.iinfo(d.numpy_name)
    x = RNG.integers(info.min, info.max, n, dtype=np.int64, endpoint=True).astype(d.numpy_name)
    x[:6] = [info.min, info.max, -1, 0, 1, info.min + 1]
    return x


def wrap(v: int, bits: int, signed: bool = True) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def as_u(x: np.ndarray, d: DType) -> list[int]:
    return [int(v) & ((1 << d.bits) - 1) for v in x]


def binop(name: str, **attrs: object):
    return lambda b, t: b.binary(name, t[0], t[1], **attrs)


@pytest.mark.parametrize("d", list(INTS.values()), ids=list(INTS))
@pytest.mark.parametrize("name", ["addi", "subi", "muli"])
def test_add_sub_mul_wrap(d: DType, name: str) -> None:
    x, y = ints(d), ints(d)[::-1].copy()
    out = elementwise(binop(name), [(x, d), (y, d)], d)
    f = {"addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b}
    expect = [wrap(f[name](int(a), int(b)), d.bits) for a, b in zip(x, y, strict=True)]
    assert out.tolist() == expect


def test_i32_overflow_wraps_like_the_gpu() -> None:
    x = np.full(8, 2**31 - 1, np.int32)
    one = np.ones(8, np.int32)
    assert (elementwise(binop("addi"), [(x, dt.i32), (one, dt.i32)], dt.i32) == -(2**31)).all()
    big = np.full(8, 65536, np.int32)
    assert (elementwise(binop("muli"), [(big, dt.i32), (big, dt.i32)], dt.i32) == 0).all()


def _ref_div(a: int, b: int, rounding: str) -> int:
    q, r = divmod(a, b)  # floor
    if r == 0:
        return q
    if rounding == "positive_inf":
        return q + 1
    if rounding == "zero":
        return q + 1 if (a < 0) != (b < 0) else q
    return q


@pytest.mark.parametrize("d", [dt.i8, dt.i32, dt.i64], ids=["i8", "i32", "i64"])
@pytest.mark.parametrize("signedness", ["signed", "unsigned"])
@pytest.mark.parametrize("rounding", ["zero", "positive_inf", "negative_inf"])
def test_divi_remi(d: DType, signedness: str, rounding: str) -> None:
    if signedness == "unsigned" and rounding == "negative_inf":
        return
    x, y = ints(d), ints(d)[::-1].copy()
    y[y == 0] = 3
    if signedness == "signed":
        y[(x == np.iinfo(d.numpy_name).min) & (y == -1)] = 2
    out = elementwise(binop("divi", signedness=signedness, rounding=rounding), [(x, d), (y, d)], d)
    rem = elementwise(binop("remi", signedness=signedness), [(x, d), (y, d)], d)
    if signedness == "signed":
        xs, ys = [int(v) for v in x], [int(v) for v in y]
    else:
        xs, ys = as_u(x, d), as_u(y, d)
    exp_q = [wrap(_ref_div(a, b, rounding), d.bits) for a, b in zip(xs, ys, strict=True)]
    exp_r = [wrap(a - _ref_div(a, b, "zero") * b, d.bits) for a, b in zip(xs, ys, strict=True)]
    assert out.tolist() == exp_q
    assert rem.tolist() == exp_r


def test_remi_sign_follows_dividend() -> None:
    x = np.array([7, 7, -7, -7, 0, 5, -5, 9], np.int32)
    y = np.array([3, -3, 3, -3, 4, 5, 5, -1], np.int32)
    assert elementwise(
        binop("remi", signedness="signed"), [(x, dt.i32), (y, dt.i32)], dt.i32
    ).tolist() == [1, 1, -1, -1, 0, 0, 0, 0]


def test_division_by_zero_and_min_over_minus_one_stop_the_kernel() -> None:
    x = np.arange(8, dtype=np.int32)
    y = np.ones(8, np.int32)
    y[5] = 0
    with pytest.raises(InterpreterError, match="division by zero") as info:
        elementwise(binop("divi", signedness="signed"), [(x, dt.i32), (y, dt.i32)], dt.i32)
    assert info.value.op == "divi"
    x[2], y[:] = -(2**31), -1
    with pytest.raises(InterpreterError, match="overflow"):
        elementwise(binop("divi", signedness="signed"), [(x, dt.i32), (y, dt.i32)], dt.i32)


@pytest.mark.parametrize("d", [dt.i8, dt.i16, dt.i32, dt.i64], ids=["i8", "i16", "i32", "i64"])
def test_shifts_maxmin_cmp_mulhi(d: DType) -> None:
    x = ints(d)
    sh = RNG.integers(0, d.bits, N).astype(d.numpy_name)
    sh[:2] = [0, d.bits - 1]
    shl = elementwise(binop("shli"), [(x, d), (sh, d)], d)
    sra = elementwise(binop("shri", signedness="signed"), [(x, d), (sh, d)], d)
    srl = elementwise(binop("shri", signedness="unsigned"), [(x, d), (sh, d)], d)
    xu = as_u(x, d)
    for i in range(N):
        s, a = int(sh[i]), int(x[i])
        assert shl[i] == wrap(a << s, d.bits)
        assert sra[i] == a >> s
        assert srl[i] == wrap(xu[i] >> s, d.bits)
    y = ints(d)[::-1].copy()
    yu = as_u(y, d)
    for sgn in ("signed", "unsigned"):
        mx = elementwise(binop("maxi", signedness=sgn), [(x, d), (y, d)], d)
        lt = elementwise(
            lambda b, t, s=sgn: b.cmp("cmpi", "less_than", t[0], t[1], signedness=s),
            [(x, d), (y, d)],
            dt.bool_,
        )
        a, bb = (x.tolist(), y.tolist()) if sgn == "signed" else (xu, yu)
        assert as_u(mx, d) == [max(p, q) & ((1 << d.bits) - 1) for p, q in zip(a, bb, strict=True)]
        assert lt.tolist() == [p < q for p, q in zip(a, bb, strict=True)]
    hi = elementwise(binop("mulhii"), [(x, d), (y, d)], d)
    assert as_u(hi, d) == [(p * q) >> d.bits for p, q in zip(xu, yu, strict=True)]


@pytest.mark.parametrize("d", [dt.i8, dt.i16, dt.i32, dt.i64], ids=["i8", "i16", "i32", "i64"])
@pytest.mark.parametrize("name", ["shli", "shri"])
@pytest.mark.parametrize("amount", ["width", "negative"])
def test_shift_by_the_width_or_more_stops_the_kernel(d: DType, name: str, amount: str) -> None:
    # tileiras treats it as undefined (a kernel shifting a constant 1 by 40 compiled to a
    # lone EXIT): the lowering clamps amounts, and an unclamped one is a lowering bug the
    # oracle must show, not a value it makes up
    x = ints(d)
    sh = RNG.integers(0, d.bits, N).astype(d.numpy_name)
    sh[7] = d.bits if amount == "width" else -1  # -1 reads as the largest unsigned amount
    attrs = {"signedness": "signed"} if name == "shri" else {}
    with pytest.raises(InterpreterError, match="width") as info:
        elementwise(binop(name, **attrs), [(x, d), (sh, d)], d)
    assert info.value.op == name


def test_absi_negi_bitwise() -> None:
    x, y = ints(dt.i16), ints(dt.i16)[::-1].copy()
    ab = elementwise(lambda b, t: b.unary("absi", t[0]), [(x, dt.i16)], dt.i16)
    ng = elementwise(lambda b, t: b.unary("negi", t[0]), [(x, dt.i16)], dt.i16)
    assert ab.tolist() == [wrap(abs(int(v)), 16) for v in x]  # |MIN| wraps to MIN
    assert ng.tolist() == [wrap(-int(v), 16) for v in x]
    for name, f in [("andi", np.bitwise_and), ("ori", np.bitwise_or), ("xori", np.bitwise_xor)]:
        out = elementwise(binop(name), [(x, dt.i16), (y, dt.i16)], dt.i16)
        np.testing.assert_array_equal(out, f(x, y))


def test_i1_arithmetic_wraps_mod_2() -> None:
    x = np.array([0, 0, 1, 1] * 2, bool)
    y = np.array([0, 1, 0, 1] * 2, bool)
    assert (
        elementwise(binop("addi"), [(x, dt.bool_), (y, dt.bool_)], dt.bool_).tolist()
        == [False, True, True, False] * 2
    )
    assert (
        elementwise(binop("andi"), [(x, dt.bool_), (y, dt.bool_)], dt.bool_).tolist()
        == [False, False, False, True] * 2
    )


# -- conversions -----------------------------------------------------------------------------


def conv(name: str, to: DType, **attrs: object):
    return lambda b, t: b.convert(name, t[0], to, **attrs)


def test_exti_trunci_respect_signedness() -> None:
    x = ints(dt.i8)
    se = elementwise(conv("exti", dt.i32, signedness="signed"), [(x, dt.i8)], dt.i32)
    ze = elementwise(conv("exti", dt.i32, signedness="unsigned"), [(x, dt.i8)], dt.i32)
    assert se.tolist() == x.tolist()
    assert ze.tolist() == as_u(x, dt.i8)
    w = ints(dt.i64)
    tr = elementwise(conv("trunci", dt.i16), [(w, dt.i64)], dt.i16)
    assert tr.tolist() == [wrap(int(v), 16) for v in w]
    b1 = elementwise(
        conv("exti", dt.i32, signedness="signed"), [(np.array([True, False] * 4), dt.bool_)], dt.i32
    )
    assert b1.tolist() == [-1, 0] * 4


def test_itof_signedness() -> None:
    x = ints(dt.i32)
    s = elementwise(conv("itof", dt.f32, signedness="signed"), [(x, dt.i32)], dt.f32)
    u = elementwise(conv("itof", dt.f64, signedness="unsigned"), [(x, dt.i32)], dt.f64)
    np.testing.assert_array_equal(s, x.astype(np.float32))
    np.testing.assert_array_equal(u, np.array(as_u(x, dt.i32), np.float64))
    h = elementwise(conv("itof", dt.f16, signedness="signed"), [(x % 5000, dt.i32)], dt.f16)
    np.testing.assert_array_equal(h, (x % 5000).astype(np.float16))


def test_ftoi_truncates_in_range() -> None:
    x = np.array([1.9, -1.9, 2147483520.0, -2147483648.0, -0.9, 0.0, -0.0, 255.5], np.float32)
    s = elementwise(conv("ftoi", dt.i32, signedness="signed"), [(x, dt.f32)], dt.i32)
    assert s.tolist() == [1, -1, 2147483520, -(2**31), 0, 0, 0, 255]
    u = np.array([255.9, 0.5, -0.9, 128.0], np.float32)  # -0.9 truncates to 0: in range
    u8 = elementwise(conv("ftoi", dt.i8, signedness="unsigned"), [(u, dt.f32)], dt.i8)
    assert as_u(u8, dt.i8) == [255, 0, 0, 128]
    big = np.array([9.2e18, -(2.0**63), 2**62, -1.5] * 2, np.float64)
    s64 = elementwise(conv("ftoi", dt.i64, signedness="signed"), [(big, dt.f64)], dt.i64)
    assert s64.tolist() == [9200000000000000000, -(2**63), 2**62, -1] * 2
    top = np.array([2.0**64 - 2048, 1.0] * 4, np.float64)
    u64 = elementwise(conv("ftoi", dt.i64, signedness="unsigned"), [(top, dt.f64)], dt.i64)
    assert as_u(u64, dt.i64) == [2**64 - 2048, 1] * 4


@pytest.mark.parametrize(("value", "to", "signedness"), [
    (np.nan, dt.i32, "signed"), (np.inf, dt.i32, "signed"), (-np.inf, dt.i64, "signed"),
    (2.0**31, dt.i32, "signed"), (-2.0**31 - 256, dt.i32, "signed"),
    (-1.0, dt.i32, "unsigned"), (2.0**32, dt.i32, "unsigned"), (128.0, dt.i8, "signed"),
    (256.0, dt.i8, "unsigned"), (2.0**63, dt.i64, "signed"), (np.nan, dt.i8, "unsigned"),
])
def test_ftoi_of_nan_infinity_or_out_of_range_stops_the_kernel(
        value: float, to: DType, signedness: str) -> None:
    # undefined in Tile IR, and tileiras uses it (a kernel converting a constant 3e9 to
    # i32 compiled to a lone EXIT): the lowering clamps first, and the oracle must show a
    # lowering that does not
    x = np.array([1.0, value, 2.0, 3.0], np.float64 if to.bits == 64 else np.float32)
    src = dt.f64 if to.bits == 64 else dt.f32
    with pytest.raises(InterpreterError, match="out of range") as info:
        elementwise(conv("ftoi", to, signedness=signedness), [(x, src)], to)
    assert info.value.op == "ftoi"


def test_itof_from_64_bits_rounds_once() -> None:
    # an i64 past 2^53 rounded to f64 first, then again to bf16: 2^62 + 2^54 + 1 became the
    # tie 2^62 + 2^54 and then 2^62 (even), where the integer itself rounds up
    v = [2**62 + 2**54 + 1, -(2**62 + 2**54 + 1), 2**62 + 2**54, 2**63 - 1, -(2**63),
         2**40 + 2**32 + 1, 2**55 + 2**47 + 3, 7]
    x = np.array(v, np.int64)
    b = elementwise(conv("itof", dt.bf16, signedness="signed"), [(x, dt.i64)], dt.bf16)
    assert b.tolist() == [_bf16_bits(_round_to_bits(n, 8)) for n in v]
    u = np.array([2**64 - 1, 2**63 + 2**55 + 1, 2**63 + 2**55, 1], np.uint64).view(np.int64)
    ub = elementwise(conv("itof", dt.bf16, signedness="unsigned"), [(u, dt.i64)], dt.bf16)
    assert ub.tolist() == [_bf16_bits(v) for v in (2**64, 2**63 + 2**56, 2**63, 1)]
    small = np.array([2049, -2051, 65519, 65520, -65520, 4097, 1, 0], np.int64)
    h = elementwise(conv("itof", dt.f16, signedness="signed"), [(small, dt.i64)], dt.f16)
    assert h.tolist() == [2048.0, -2052.0, 65504.0, np.inf, -np.inf, 4096.0, 1.0, 0.0]


def _bf16_bits(v: int) -> int:
    """The bf16 bit pattern of an integer bf16 holds exactly (as the tile's memory holds it)."""
    return int(np.array(float(v), np.float32).view(np.uint32)) >> 16


def _round_to_bits(n: int, bits: int) -> int:
    """`n` rounded to `bits` significant bits, nearest, ties to even (exact integers)."""
    m, drop = abs(n), max(abs(n).bit_length() - bits, 0)
    q, r = divmod(m, 1 << drop)
    half = 1 << drop >> 1
    if drop and (r > half or (r == half and q & 1)):
        q += 1
    return (q << drop) * (-1 if n < 0 else 1)


def test_bitcast_round_trips() -> None:
    x = (RNG.standard_normal(N) * 100).astype(np.float32)
    bits = elementwise(conv("bitcast", dt.i32), [(x, dt.f32)], dt.i32)
    np.testing.assert_array_equal(bits, x.view(np.int32))
    back = elementwise(conv("bitcast", dt.f32), [(bits, dt.i32)], dt.f32)
    np.testing.assert_array_equal(back, x)
    h = x.astype(np.float16)
    hb = elementwise(conv("bitcast", dt.i16), [(h, dt.f16)], dt.i16)
    np.testing.assert_array_equal(hb, h.view(np.int16))
