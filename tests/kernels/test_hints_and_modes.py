"""Compiler hints and math modes (issue 8 item 11): `@cutile.entry(num_ctas=, occupancy=,
num_worker_warps=, opt_level=)` with `ByTarget`, load `latency=` / `allow_tma=`, and
`truediv` / `exp2` / `sqrt` rounding and flush-to-zero. Hints change how tileiras compiles
a kernel, never its values: each hinted kernel is checked against numpy on the active
backend, and assembled for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import (
    Const,
    Mut,
    Tensor,
    block_id,
    exp2,
    f16,
    f32,
    load_tile_like,
    mma,
    num_tiles,
    sqrt,
    truediv,
    zeros,
)

rng = np.random.default_rng(8)


def make_gemm(**hints: object) -> cutile.EntryKernel:
    def gemm(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]],
             y: Tensor[f16, [-1, -1]], BM: Const[int], BN: Const[int], BK: Const[int]):
        acc = zeros((BM, BN), f32)
        for k in range(num_tiles(x, 1, (BM, BK))):
            a = x.load_tile((BM, BK), (block_id(0), k), latency=3)
            b = y.load_tile((BK, BN), (k, block_id(1)), latency=4, allow_tma=True)
            acc = mma(a, b, acc)
        z.store(acc)

    return cutile.entry(**hints)(gemm)  # type: ignore[call-overload,no-any-return]


HINTED = [
    {},
    {"num_ctas": 2},
    {"occupancy": 2, "opt_level": 2},
    {"num_ctas": cutile.ByTarget(sm_90=2, sm_100=4, default=1), "num_worker_warps": 4},
]


@pytest.mark.parametrize("hints", HINTED, ids=lambda h: ",".join(h) or "none")
def test_hinted_gemm_computes_the_same_product(hints: dict[str, object]) -> None:
    gemm = make_gemm(**hints)
    m, n, k = 200, 136, 96
    x = rng.standard_normal((m, k)).astype(np.float16)
    y = rng.standard_normal((k, n)).astype(np.float16)
    z = api.full([m, n], np.nan, f32).partition([64, 64])
    z, _, _ = gemm(z, api.from_numpy(x), api.from_numpy(y), BK=32).sync()
    want = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(z.unpartition().to_numpy(), want, rtol=1e-3, atol=1e-3)


def test_hints_reach_the_entry_and_the_cache_identity() -> None:
    plain, hinted = make_gemm(), make_gemm(num_ctas=cutile.ByTarget(sm_90=2, default=1),
                                           occupancy=3)
    consts = {"BM": 64, "BN": 64, "BK": 32}
    spec = hinted.specialization(consts)
    fn = hinted.lowered(spec).module.functions[0]
    assert fn.hints == {"default": {"num_cta_in_cga": 1, "occupancy": 3},
                        "sm_90": {"num_cta_in_cga": 2}}
    assert plain.identity(plain.specialization(consts)) != hinted.identity(spec)
    loads = [op for op in fn.walk() if op.name == "load_view_tko"]
    assert [op.attrs.get("optimization_hints") for op in loads] == [
        {"default": {"latency": 3}}, {"default": {"latency": 4, "allow_tma": True}}]
    again = hinted.with_hints(occupancy=1)
    assert again.hints["default"] == {"num_cta_in_cga": 1, "occupancy": 1}


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"num_ctas": 3}, "num_ctas=3"), ({"occupancy": 0}, "occupancy=0"),
    ({"num_worker_warps": 6}, "num_worker_warps=6"), ({"opt_level": 5}, "opt_level=5"),
    ({"num_ctas": cutile.ByTarget(sm_90=32)}, "num_ctas[sm_90]=32"),
])
def test_bad_hints_are_config_errors_at_the_decorator(kwargs: dict[str, object],
                                                      needle: str) -> None:
    with pytest.raises(cutile.ConfigError) as info:
        make_gemm(**kwargs)
    assert info.value.code == "CT8020" and needle in str(info.value)


def test_numpy_integer_hints_are_ints() -> None:
    # a swept value is often a numpy integer; `Const`s take them, so do hints
    k = make_gemm(occupancy=np.int64(2), num_ctas=cutile.ByTarget(sm_90=np.int32(2)))
    assert k.hints["default"]["occupancy"] == 2
    assert type(k.hints["default"]["occupancy"]) is int
    assert k.hints["sm_90"]["num_cta_in_cga"] == 2
    with pytest.raises(cutile.ConfigError):
        make_gemm(occupancy=np.bool_(True))


def test_bytarget_names_architectures() -> None:
    with pytest.raises(cutile.ConfigError, match="not a GPU architecture"):
        cutile.ByTarget(hopper=2)


@pytest.mark.tileiras
@pytest.mark.parametrize("hints", HINTED, ids=lambda h: ",".join(h) or "none")
def test_hinted_gemm_assembles_for_sm90(hints: dict[str, object]) -> None:
    assert make_gemm(**hints).compile("sm_90", BM=128, BN=128, BK=64).cubin[:4] == b"\x7fELF"


@cutile.entry
def divisions(approx: Mut[Tensor[f32, ["B"]]], zero: Mut[Tensor[f32, ["B"]]],
              down: Mut[Tensor[f32, ["B"]]], up: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]],
              y: Tensor[f32, [-1]], B: Const[int]):
    a = load_tile_like(x, approx)
    b = load_tile_like(y, approx)
    approx.store(truediv(a, b, "approx"))
    zero.store(truediv(a, b, rounding="zero"))
    down.store(truediv(a, b, rounding="negative_inf"))
    up.store(truediv(a, b, rounding="positive_inf"))


def test_division_roundings_bracket_the_exact_quotient() -> None:
    n = 1024
    xs = rng.standard_normal(n).astype(np.float32)
    ys = (rng.standard_normal(n) + np.sign(rng.standard_normal(n)) * 0.1).astype(np.float32)
    outs = [api.full([n], np.nan, f32).partition([256]) for _ in range(4)]
    *outs, _, _ = divisions(*outs, api.from_numpy(xs), api.from_numpy(ys)).sync()
    approx, zero, down, up = (o.unpartition().to_numpy().astype(np.float64) for o in outs)
    exact = xs.astype(np.float64) / ys.astype(np.float64)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(approx - exact) <= 2 * ulp + 1e-30)
    assert np.all(down <= exact) and np.all(up >= exact)
    assert np.all(np.abs(zero) <= np.abs(exact))
    for r in (zero, down, up):
        assert np.all(np.abs(r - exact) <= ulp)


@cutile.entry
def exp2_modes(plain: Mut[Tensor[f32, ["B"]]], ftz: Mut[Tensor[f32, ["B"]]],
               x: Tensor[f32, [-1]], B: Const[int]):
    t = load_tile_like(x, plain)
    plain.store(exp2(t))
    ftz.store(exp2(t, flush_to_zero=True))


def test_exp2_flush_to_zero_flushes_subnormal_results() -> None:
    xs = np.concatenate([rng.uniform(-20, 20, 120), [-130.0, -135.5, -140.0, -126.0, -10.0,
                                                      0.0, 1.0, 2.5]]).astype(np.float32)
    outs = [api.full([128], np.nan, f32).partition([64]) for _ in range(2)]
    p, f, _ = exp2_modes(*outs, api.from_numpy(xs)).sync()
    plain, ftz = p.unpartition().to_numpy(), f.unpartition().to_numpy()
    want = np.exp2(xs.astype(np.float64))
    normal = want >= np.finfo(np.float32).tiny
    np.testing.assert_allclose(plain[normal], want[normal], rtol=3e-7)
    np.testing.assert_allclose(ftz[normal], want[normal], rtol=3e-7)
    assert np.all(ftz[~normal] == 0.0)
    assert np.all(plain[~normal] > 0.0)   # subnormal results survive without the flag


@cutile.entry
def sqrt_approx(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(sqrt(load_tile_like(x, z), rounding="approx"))


def test_sqrt_approx_is_close() -> None:
    xs = rng.uniform(0, 1e4, 1000).astype(np.float32)
    z = api.zeros([1000], f32).partition([256])
    z, _ = sqrt_approx(z, api.from_numpy(xs)).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), np.sqrt(xs.astype(np.float64)),
                               rtol=1e-6)


@pytest.mark.tileiras
@pytest.mark.parametrize("kernel", [divisions, exp2_modes, sqrt_approx])
def test_math_modes_assemble_for_sm90(kernel: cutile.EntryKernel) -> None:
    assert kernel.compile("sm_90", B=256).cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize(("body", "code", "needle"), [
    ("z.store(truediv(load_tile_like(x, z), 3.0, rounding='approx'))", "CT3061",
     "exists for f32 only"),
    ("z.store(truediv(load_tile_like(x, z), 3.0, rounding='up'))", "CT3061",
     "`rounding` must be one of"),
    ("z.store(exp2(load_tile_like(x, z), flush_to_zero=True))", "CT3061", "f32 only"),
    ("z.store(load_tile_like(x, z, latency=11))", "CT3060", "from 1 to 10"),
    ("z.store(x.load_tile((B,), (block_id(0),), allow_tma=1))", "CT3060", "True or False"),
])
def test_bad_modes_and_load_hints_are_typed_errors(tmp_path: object, body: str, code: str,
                                                  needle: str) -> None:
    src = (
        "@cutile.entry\n"
        "def k(z: Mut[Tensor[f16, ['B']]], x: Tensor[f16, [-1]], B: Const[int]):\n"
        f"    {body}\n"
    )
    k = load_kernel(tmp_path, src)
    with pytest.raises(cutile.CutileError) as info:
        k.lowered(k.specialization({"B": 128}))
    assert code in str(info.value) and needle in str(info.value)
