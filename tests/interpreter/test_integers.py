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
    sh = RNG.integers(0, d.bits + 3, N).astype(d.numpy_name)
    shl = elementwise(binop("shli"), [(x, d), (sh, d)], d)
    sra = elementwise(binop("shri", signedness="signed"), [(x, d), (sh, d)], d)
    srl = elementwise(binop("shri", signedness="unsigned"), [(x, d), (sh, d)], d)
    xu = as_u(x, d)
    for i in range(N):
        s, a = int(sh[i]), int(x[i])
        assert shl[i] == (wrap(a << s, d.bits) if s < d.bits else 0)
        assert sra[i] == a >> min(s, d.bits - 1)
        assert srl[i] == (wrap(xu[i] >> s, d.bits) if s < d.bits else 0)
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


def test_ftoi_truncates_and_saturates() -> None:
    x = np.array([1.9, -1.9, 3e9, -3e9, np.nan, np.inf, -np.inf, 255.5], np.float32)
    s = elementwise(conv("ftoi", dt.i32, signedness="signed"), [(x, dt.f32)], dt.i32)
    assert s.tolist() == [1, -1, 2**31 - 1, -(2**31), 0, 2**31 - 1, -(2**31), 255]
    # narrower than 32 bits: saturate to 32 bits, then keep the low bits, as the H200 does
    # (float -> i8 of 300.0 is 44 there); the DSL's astype clamps before narrowing
    u = elementwise(conv("ftoi", dt.i8, signedness="unsigned"), [(x, dt.f32)], dt.i8)
    assert as_u(u, dt.i8) == [1, 0, 0, 0, 0, 255, 0, 255]
    n8 = np.array([300.0, -300.0, np.inf, -np.inf, 127.9], np.float32)
    s8 = elementwise(conv("ftoi", dt.i8, signedness="signed"), [(n8, dt.f32)], dt.i8)
    assert s8.tolist() == [44, -44, -1, 0, 127]
    big = np.array([9.3e18, -9.3e18, 1e19, 2**62] * 2, np.float64)
    s64 = elementwise(conv("ftoi", dt.i64, signedness="signed"), [(big, dt.f64)], dt.i64)
    assert s64.tolist() == [2**63 - 1, -(2**63), 2**63 - 1, 2**62] * 2


def test_bitcast_round_trips() -> None:
    x = (RNG.standard_normal(N) * 100).astype(np.float32)
    bits = elementwise(conv("bitcast", dt.i32), [(x, dt.f32)], dt.i32)
    np.testing.assert_array_equal(bits, x.view(np.int32))
    back = elementwise(conv("bitcast", dt.f32), [(bits, dt.i32)], dt.f32)
    np.testing.assert_array_equal(back, x)
    h = x.astype(np.float16)
    hb = elementwise(conv("bitcast", dt.i16), [(h, dt.f16)], dt.i16)
    np.testing.assert_array_equal(hb, h.view(np.int16))
