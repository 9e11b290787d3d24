"""Elementwise float arithmetic, math, rounding modes, NaN/zero rules, comparisons, select."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile.ir import TileType

from .kit import dt, elementwise

RNG = np.random.default_rng(7)
N = 256


def f32s(n: int = N, scale: float = 4.0) -> np.ndarray:
    return (RNG.standard_normal(n) * scale).astype(np.float32)


def binop(name: str, **attrs: object):
    return lambda b, t: b.binary(name, t[0], t[1], **attrs)


@pytest.mark.parametrize(
    ("name", "ref"),
    [("addf", np.add), ("subf", np.subtract), ("mulf", np.multiply), ("divf", np.divide)],
)
def test_f32_arithmetic_is_ieee(name: str, ref: object) -> None:
    x, y = f32s(), f32s()
    out = elementwise(binop(name), [(x, dt.f32), (y, dt.f32)], dt.f32)
    np.testing.assert_array_equal(out, ref(x, y))  # type: ignore[operator]


@pytest.mark.parametrize(
    ("name", "ref", "positive"),
    [
        ("exp", np.exp, False),
        ("exp2", np.exp2, False),
        ("log", np.log, True),
        ("log2", np.log2, True),
        ("sqrt", np.sqrt, True),
        ("rsqrt", lambda v: 1 / np.sqrt(v), True),
        ("sin", np.sin, False),
        ("cos", np.cos, False),
        ("tan", np.tan, False),
        ("sinh", np.sinh, False),
        ("cosh", np.cosh, False),
        ("tanh", np.tanh, False),
        ("floor", np.floor, False),
        ("ceil", np.ceil, False),
        ("absf", np.abs, False),
        ("negf", np.negative, False),
    ],
)
@pytest.mark.parametrize("d", [dt.f32, dt.f64, dt.f16])
def test_math_against_float64(name: str, ref: object, positive: bool, d: object) -> None:
    x = f32s(scale=2.0)
    if positive:
        x = np.abs(x) + np.float32(0.01)
    x = x.astype(d.numpy_name)  # type: ignore[attr-defined]
    out = elementwise(lambda b, t: b.unary(name, t[0]), [(x, d)], d)  # type: ignore[arg-type]
    expect = ref(x.astype(np.float64))  # type: ignore[operator]
    rtol = {"f32": 2e-6, "f64": 1e-14, "f16": 1e-3}[d.name]  # type: ignore[attr-defined]
    np.testing.assert_allclose(out.astype(np.float64), expect, rtol=rtol, atol=rtol)


def test_pow_remf_fma() -> None:
    x, y, z = np.abs(f32s()) + np.float32(0.5), f32s(scale=2.0), f32s()
    out = elementwise(lambda b, t: b.binary("pow", t[0], t[1]), [(x, dt.f32), (y, dt.f32)], dt.f32)
    np.testing.assert_allclose(out, np.power(x.astype(np.float64), y), rtol=1e-5)
    out = elementwise(binop("remf"), [(y, dt.f32), (x, dt.f32)], dt.f32)
    np.testing.assert_array_equal(out, np.fmod(y, x))
    out = elementwise(
        lambda b, t: b.op("fma", t, [t[0].type], {"rounding_mode": "nearest_even"}).result,
        [(x, dt.f32), (y, dt.f32), (z, dt.f32)],
        dt.f32,
    )
    exact = x.astype(np.float64) * y + z  # one rounding of a 48-bit product plus z
    np.testing.assert_array_equal(out, exact.astype(np.float32))


def test_f16_ops_round_once_from_the_exact_result() -> None:
    x, y = f32s().astype(np.float16), f32s().astype(np.float16)
    for name, f in [("addf", np.add), ("mulf", np.multiply), ("divf", np.divide)]:
        out = elementwise(binop(name), [(x, dt.f16), (y, dt.f16)], dt.f16)
        np.testing.assert_array_equal(out, f(x.astype(np.float64), y).astype(np.float16))


# -- bf16 / tf32 ---------------------------------------------------------------------------


def bf16_round_reference(v: float, keep: int = 7) -> float:
    """Nearest value with `keep` mantissa bits, ties to even: an independent scalar reference."""
    if v == 0 or not np.isfinite(v):
        return v
    m, e = np.frexp(v)  # v = m * 2^e, 0.5 <= |m| < 1
    scaled = Fraction(m) * 2 ** (keep + 1)
    lo = scaled.numerator // scaled.denominator
    rem = scaled - lo
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and lo % 2):
        lo += 1
    return float(Fraction(lo, 2 ** (keep + 1)) * Fraction(2) ** int(e))


def bf16_bits(v: np.ndarray) -> np.ndarray:
    return (np.asarray(v, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def test_bf16_add_matches_scalar_reference() -> None:
    xb = bf16_bits(f32s())
    yb = bf16_bits(f32s() * np.float32(1e-2))
    out = elementwise(binop("addf"), [(xb, dt.bf16), (yb, dt.bf16)], dt.bf16)
    exact = bf16_value(xb).astype(np.float64) + bf16_value(yb)
    expect = np.array([bf16_round_reference(float(v)) for v in exact], np.float32)
    np.testing.assert_array_equal(bf16_value(out), expect)


def test_ftof_to_bf16_f16_tf32_rounds_to_nearest_even() -> None:
    x = f32s()
    x[:4] = [1.00390625, 1.01171875, -3.0e38, 65520.0]  # bf16 ties and f16 overflow
    bf = elementwise(lambda b, t: b.convert("ftof", t[0], dt.bf16), [(x, dt.f32)], dt.bf16)
    np.testing.assert_array_equal(bf16_value(bf), [bf16_round_reference(float(v)) for v in x])
    h = elementwise(lambda b, t: b.convert("ftof", t[0], dt.f16), [(x, dt.f32)], dt.f16)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h, x.astype(np.float16))
    tf = elementwise(
        lambda b, t: b.convert("ftof", b.convert("ftof", t[0], dt.tf32), dt.f32),
        [(x, dt.f32)],
        dt.f32,
    )
    np.testing.assert_array_equal(tf, [bf16_round_reference(float(v), keep=10) for v in x])


# -- directed rounding (exact reference with Fractions) -------------------------------------

finite_f32 = st.floats(min_value=-(2.0**100), max_value=2.0**100, width=32, allow_subnormal=False)


def _check_directed(result: float, exact: Fraction, mode: str) -> None:
    r = np.float32(result)
    down = Fraction(float(np.nextafter(r, np.float32(-np.inf))))
    up = Fraction(float(np.nextafter(r, np.float32(np.inf))))
    fr = Fraction(float(r))
    if mode == "positive_inf":
        assert (fr >= exact and down < exact) or fr == exact
    elif mode == "negative_inf":
        assert (fr <= exact and up > exact) or fr == exact
    else:  # zero
        assert abs(fr) <= abs(exact)
        assert fr == exact or abs(up if exact > 0 else down) > abs(exact)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(finite_f32, finite_f32, finite_f32), min_size=16, max_size=16),
    st.sampled_from(["zero", "negative_inf", "positive_inf"]),
)
def test_directed_rounding_is_exact_for_add_mul_fma(rows: list, mode: str) -> None:
    x, y, z = (np.array(c, np.float32) for c in zip(*rows, strict=True))
    for name in ("addf", "subf", "mulf", "fma"):
        if name == "fma":

            def build(b, t):  # type: ignore[no-untyped-def]
                return b.op("fma", t, [t[0].type], {"rounding_mode": mode}).result

            ins = [(x, dt.f32), (y, dt.f32), (z, dt.f32)]
        else:
            build = binop(name, rounding_mode=mode)
            ins = [(x, dt.f32), (y, dt.f32)]
        out = elementwise(build, ins, dt.f32)
        for i in range(16):
            a, bb, c = Fraction(float(x[i])), Fraction(float(y[i])), Fraction(float(z[i]))
            exact = {"addf": a + bb, "subf": a - bb, "mulf": a * bb, "fma": a * bb + c}[name]
            if abs(exact) > Fraction(3.0e38) or exact == 0:
                continue
            _check_directed(float(out[i]), exact, mode)


def test_flush_to_zero_flushes_f32_subnormals() -> None:
    tiny = np.float32(1e-40)  # subnormal
    x = np.full(8, tiny, np.float32)
    y = np.zeros(8, np.float32)
    assert (elementwise(binop("addf"), [(x, dt.f32), (y, dt.f32)], dt.f32) == tiny).all()
    one = np.ones(8, np.float32)
    out = elementwise(binop("mulf", flush_to_zero=True), [(-x, dt.f32), (one, dt.f32)], dt.f32)
    assert (out == 0).all() and np.signbit(out).all()  # sign-preserving zero
    half = np.full(8, 0.5, np.float32)
    x2 = np.full(8, np.float32(2.0e-38), np.float32)  # normal, but halving it is subnormal
    out = elementwise(binop("mulf", flush_to_zero=True), [(x2, dt.f32), (half, dt.f32)], dt.f32)
    assert (out == 0).all()
    out = elementwise(binop("mulf"), [(x2, dt.f32), (half, dt.f32)], dt.f32)
    assert (out == x2 * half).all() and (out != 0).all()


# -- max/min, comparisons, select ----------------------------------------------------------


def test_maxf_minf_nan_and_signed_zero_rules() -> None:
    nan = np.float32(np.nan)
    x = np.array([1, nan, nan, 0.0, -0.0, -0.0, 2, -5], np.float32)
    y = np.array([2, 3, nan, -0.0, 0.0, -0.0, nan, -7], np.float32)
    mx = elementwise(binop("maxf"), [(x, dt.f32), (y, dt.f32)], dt.f32)
    np.testing.assert_array_equal(mx, [2, 3, nan, 0, 0, -0.0, 2, -5])
    assert list(np.signbit(mx[3:6])) == [False, False, True]
    mxp = elementwise(binop("maxf", propagate_nan=True), [(x, dt.f32), (y, dt.f32)], dt.f32)
    np.testing.assert_array_equal(mxp, [2, nan, nan, 0, 0, -0.0, nan, -5])
    mn = elementwise(binop("minf"), [(x, dt.f32), (y, dt.f32)], dt.f32)
    np.testing.assert_array_equal(mn, [1, 3, nan, -0.0, -0.0, -0.0, 2, -7])
    assert list(np.signbit(mn[3:6])) == [True, True, True]


PREDS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less_than": np.less,
    "less_than_or_equal": np.less_equal,
    "greater_than": np.greater,
    "greater_than_or_equal": np.greater_equal,
}


@pytest.mark.parametrize("pred", list(PREDS))
@pytest.mark.parametrize("ordering", ["ordered", "unordered"])
def test_cmpf_predicates_and_ordering(pred: str, ordering: str) -> None:
    x, y = f32s(), f32s()
    y[:32] = x[:32]
    x[32:48] = np.nan
    y[40:56] = np.nan
    out = elementwise(
        lambda b, t: b.cmp("cmpf", pred, t[0], t[1], comparison_ordering=ordering),
        [(x, dt.f32), (y, dt.f32)],
        dt.bool_,
    )
    unordered = np.isnan(x) | np.isnan(y)
    with np.errstate(invalid="ignore"):
        base = PREDS[pred](x, y) & ~unordered
    expect = base | unordered if ordering == "unordered" else base
    np.testing.assert_array_equal(out, expect)


def test_select_and_cmp_compose() -> None:
    x, y = f32s(), f32s()

    def build(b, t):  # type: ignore[no-untyped-def]
        c = b.cmp("cmpf", "greater_than", t[0], t[1])
        return b.select(c, t[0], t[1])

    out = elementwise(build, [(x, dt.f32), (y, dt.f32)], dt.f32)
    np.testing.assert_array_equal(out, np.maximum(x, y))


def test_tile_types_are_respected_by_rank0_tiles() -> None:
    # rank-0 tiles (scalars) flow through the same handlers
    from cutile.interpreter import Pointer, run
    from cutile.ir import scalar

    from .kit import new_kernel, ptr, raw

    b, (out, a, c) = new_kernel([ptr(dt.f32), scalar(dt.f32), scalar(dt.f32)], "s")
    s = b.binary("mulf", a, c)
    raw(b, "store_ptr_tko", [out, s], [b.make_token().type])
    o = np.zeros(1, np.float32)
    run(b.module, "s", (1, 1, 1), [Pointer.to(o), 1.5, -4.0])
    assert o[0] == -6.0
    assert TileType((), dt.f32) == s.type


def test_fpowi_raises_floats_to_integer_powers() -> None:
    xs = np.array([2.0, -1.5, 0.5, 3.0, -2.0, 10.0, 0.0, 1.25], np.float32)
    es = np.array([3, 2, -2, 0, 5, -1, 2, 7], np.int32)
    got = elementwise(lambda b, t: b.op("fpowi", [t[0], t[1]], [t[0].type]).result,
                      [(xs, dt.f32), (es, dt.i32)], dt.f32)
    np.testing.assert_array_equal(got, (xs.astype(np.float64) ** es).astype(np.float32))
