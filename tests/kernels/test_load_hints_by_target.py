"""Load hints per GPU architecture: `latency=` and `allow_tma=` of a load take a
`cutile.ByTarget(...)` as kernel hints do, written in the kernel (values may be `Const`s) or
taken from the enclosing scope. Every value goes into the load's `optimization_hints` under
its architecture and tileiras takes those of the target it compiles for: the same bytecode
keeps TMA off on sm_90 and on for sm_100, or the other way round. Hints never change values,
so each hinted kernel is also checked against numpy on the active backend."""

from __future__ import annotations

import re

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api
from cutile.core import f32
from cutile.dump import sass
from cutile.errors import KernelCheckError

rng = np.random.default_rng(81)

GEMM = """
LATENCY = cutile.ByTarget(sm_90=4, sm_100=6, default=2)

@cutile.entry
def gemm(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f16, [-1, -1]], y: Tensor[f16, [-1, -1]],
         BM: Const[int], BN: Const[int], BK: Const[int], L: Const[int]):
    acc = zeros((BM, BN), f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        a = x.load_tile((BM, BK), (block_id(0), k), latency=cutile.ByTarget(sm_90=L, sm_120=9),
                        allow_tma=TMA_A)
        b = y.load_tile((BK, BN), (k, block_id(1)), latency=LATENCY, allow_tma=TMA_B)
        acc = mma(a, b, acc)
    z.store(acc)
"""

TMA_OFF_ON_SM90 = "cutile.ByTarget(sm_90=False, default=True)"
TMA_ON_ONLY_SM90 = "cutile.ByTarget(True, sm_100=False, sm_120=False)"


def gemm(tmp_path: object, tma: str) -> cutile.EntryKernel:
    src = GEMM.replace("TMA_A", tma).replace("TMA_B", tma)
    return load_kernel(tmp_path, src, "gemm")  # type: ignore[no-any-return]


def load_hints(kernel: cutile.EntryKernel, **consts: int) -> list[object]:
    fn = kernel.lowered(kernel.specialization(consts)).module.functions[0]
    return [op.attrs.get("optimization_hints") for op in fn.walk() if op.name == "load_view_tko"]


def sass_of(cubin: bytes) -> str:
    text = sass(cubin)
    if text is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    return text


def test_every_architecture_keeps_its_values(tmp_path: object) -> None:
    k = gemm(tmp_path, TMA_OFF_ON_SM90)
    assert load_hints(k, BM=64, BN=64, BK=32, L=3) == [
        {"default": {"allow_tma": True}, "sm_120": {"latency": 9},
         "sm_90": {"latency": 3, "allow_tma": False}},
        {"default": {"latency": 2, "allow_tma": True}, "sm_100": {"latency": 6},
         "sm_90": {"latency": 4, "allow_tma": False}},
    ]
    # A `Const` value is the launch's: another L, another specialization and bytecode.
    assert load_hints(k, BM=64, BN=64, BK=32, L=7)[0]["sm_90"] == {  # type: ignore[index]
        "latency": 7, "allow_tma": False}


def test_a_hinted_gemm_computes_the_product(tmp_path: object) -> None:
    k = gemm(tmp_path, TMA_OFF_ON_SM90)
    m, n, kk = 192, 136, 96
    x = rng.standard_normal((m, kk)).astype(np.float16)
    y = rng.standard_normal((kk, n)).astype(np.float16)
    z = api.full([m, n], np.nan, f32).partition([64, 64])
    z = k(z, api.from_numpy(x), api.from_numpy(y), BK=32, L=3).sync()[0]
    want = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(z.unpartition().to_numpy(), want, rtol=1e-3, atol=1e-3)


def test_the_hints_are_part_of_the_kernels_identity(tmp_path: object) -> None:
    a, b = gemm(tmp_path, TMA_OFF_ON_SM90), gemm(tmp_path, TMA_ON_ONLY_SM90)
    consts = {"BM": 64, "BN": 64, "BK": 32, "L": 3}
    assert a.identity(a.specialization(consts)) != b.identity(b.specialization(consts))


@pytest.mark.tileiras
def test_the_bytecode_carries_the_sm90_values(tmp_path: object) -> None:
    from cutile.backend.tileiras import find_tileiras

    if not find_tileiras().disassembler.exists():
        pytest.skip("tileirdisasm is not installed next to tileiras")
    built = gemm(tmp_path, TMA_OFF_ON_SM90).compile("sm_90", BM=128, BN=128, BK=64, L=3)
    loads = [line for line in built.ir_text().splitlines() if "load_view_tko" in line]
    assert len(loads) == 2
    assert re.search(r"sm_90 = \{allow_tma = false, latency = 3\}", loads[0]), loads[0]
    assert re.search(r"sm_90 = \{allow_tma = false, latency = 4\}", loads[1]), loads[1]
    assert "sm_100 = {latency = 6}" in loads[1] and "sm_120 = {latency = 9}" in loads[0]


@pytest.mark.tileiras
@pytest.mark.parametrize(("tma", "on"), [
    (TMA_OFF_ON_SM90, {"sm_90": False, "sm_100": True, "sm_120": True}),
    (TMA_ON_ONLY_SM90, {"sm_90": True, "sm_100": False, "sm_120": False}),
], ids=["off-on-sm90", "on-only-on-sm90"])
def test_tileiras_takes_the_values_of_its_target(tmp_path: object, tma: str,
                                                 on: dict[str, bool]) -> None:
    # The same kernel, assembled per target: TMA loads (UTMALDG) exactly where that
    # target's `allow_tma` is True.
    k = gemm(tmp_path, tma)
    for target, want in on.items():
        text = sass_of(k.compile(target, BM=128, BN=128, BK=64, L=3).cubin)
        assert ("UTMALDG" in text) == want, f"{target}: allow_tma={want}"


@pytest.mark.parametrize(("hint", "message", "points_at"), [
    ("latency=cutile.ByTarget(sm_90=11, default=2)",
     "`latency` for sm_90 must be a compile-time integer from 1 to 10", "11"),
    ("latency=cutile.ByTarget(sm_90=3, default=0)",
     "`latency` for default must be a compile-time integer from 1 to 10", "0"),
    ("allow_tma=cutile.ByTarget(sm_100=1)", "`allow_tma` for sm_100 must be True or False", "1"),
    ("latency=cutile.ByTarget(hopper=3)", "`hopper` is not a GPU architecture like `sm_90`",
     "hopper=3"),
    ("latency=cutile.ByTarget()", "`ByTarget()` gives no value", "cutile.ByTarget()"),
    ("latency=cutile.ByTarget(2, 3)", "`ByTarget` takes one positional value, the default",
     "cutile.ByTarget(2, 3)"),
    ("latency=cutile.ByTarget(2, default=3)", "the default of `ByTarget` is given twice",
     "default=3"),
])
def test_a_bad_per_target_hint_is_ct3060_at_its_value(tmp_path: object, hint: str,
                                                      message: str, points_at: str) -> None:
    k = load_kernel(tmp_path, f"""
@cutile.entry
def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    z.store(x.load_tile((64,), (block_id(0),), {hint}))
""")
    with pytest.raises(KernelCheckError) as info:
        k.check()
        k.lowered(k.specialization({}))
    err = info.value
    assert err.codes == ["CT3060"] and message in err.message
    label = err.diagnostics[0].primary
    with open(label.file) as f:
        line = f.read().splitlines()[label.line - 1]
    assert line[label.col:label.end_col] == points_at


@pytest.mark.parametrize(("body", "code"), [
    ("z.store(x.load_tile((64,), (block_id(0),)) + cutile.ByTarget(sm_90=1))", "CT3001"),
    ("z.store(x.load_tile((64,), (block_id(0),), padding=cutile.ByTarget(sm_90='nan')))",
     "CT3038"),
])
def test_a_per_target_value_is_only_a_load_hint(tmp_path: object, body: str, code: str) -> None:
    k = load_kernel(tmp_path, f"""
@cutile.entry
def k(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    {body}
""")
    with pytest.raises(KernelCheckError) as info:
        k.check()
        k.lowered(k.specialization({}))
    assert info.value.codes == [code]

