"""The tensor-core examples compile to Hopper's fast paths: the SASS of the GEMMs and of
flash attention (assembled for sm_90 by the real tileiras) uses warpgroup MMA (HGMMA) and
TMA loads (UTMALDG). A change that knocks a kernel off those paths (a device check in the
inner loop, a lost alignment fact) fails here, in CI, without a GPU."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_examples import AOT, load

from cutile.dump import sass

pytestmark = pytest.mark.tileiras

FAST_PATH = [
    ("attention", "attention"), ("attention", "attention_causal"),
    ("attention", "attention_even"), ("attention", "attention_causal_even"),
    ("persistent_gemm", "persistent_gemm"), ("batched_gemm", "batched_gemm"),
    ("swiglu_mlp", "swiglu_up"), ("swiglu_mlp", "down_proj"), ("multi_gpu", "gemm"),
]


def sass_of(cubin: bytes) -> str:
    text = sass(cubin)
    if text is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    return text


@pytest.mark.parametrize(("example", "kernel"), FAST_PATH)
def test_tensor_core_examples_use_wgmma_and_tma(example: str, kernel: str) -> None:
    k: Any = getattr(load(example), kernel)
    text = sass_of(k.compile(target="sm_90", **AOT[example][kernel]).cubin)
    assert "HGMMA" in text, f"{example}.{kernel}: no warpgroup MMA"
    assert "UTMALDG" in text, f"{example}.{kernel}: no TMA load"


# every one-pass plan of the row-reduction examples (tiles, TMA choices and hints picked on
# the host; benchmarks/norms.py times them): short rows several to a block, long rows over
# 8-16 warps or a cluster of blocks
NORM_PLANS = [(example, {2: "bf16", 4: "f32"}[size], n)
              for example in ("softmax", "rmsnorm", "layernorm")
              for n, size in sorted(load(example).ROW_PLANS)]


# plans that spill a few registers and were still the fastest on the H200 (benchmarks/norms.py,
# speed-up over the best plan that does not spill), kept by measurement: none since the
# gathered-row plans of 2026-12-01 (softmax and LayerNorm f32 16k spilled before them; the
# bf16 LayerNorm plans at 16k and 32k until the "shifted" variant).
MEASURED_SPILLING: dict[tuple[str, str, int], float] = {}


@pytest.mark.parametrize(("example", "dtype", "n"), NORM_PLANS)
def test_norm_plans_keep_rows_in_registers_without_spills(example: str, dtype: str,
                                                          n: int) -> None:
    """The one-pass kernels read the row with 128-bit loads (or, where the plan asks for it,
    through TMA) and keep it in registers: a load from local memory (LDL) would be a spill,
    which the plan's `occupancy` must leave room to avoid. A plan that keeps the store off
    the TMA unit writes with 128-bit stores, and one that keeps every access off it has no
    TMA warpgroup: its blocks have exactly the worker warps' threads."""
    from cutile.core import bf16, f32
    from cutile.dump import resources

    mod = load(example)
    dt = {"bf16": bf16, "f32": f32}[dtype]
    p = mod.plan(n, dt)
    assert p.BK is None, "a one-pass plan"
    cubin = p.kernel(dt).compile(target="sm_90", BM=p.BM, BN=p.BN, **p.consts()).cubin
    text = sass_of(cubin)
    where = f"{example} {dtype} {n}"
    wide = "UTMALDG" if p.tma else "LDG.E.128"
    assert wide in text, f"{where}: the row is not loaded with {wide}"
    spills = bool(re.search(r"\bLDL\b", text))
    assert spills == ((example, dtype, n) in MEASURED_SPILLING), f"{where}: spills={spills}"
    if not p.store_tma:
        assert "UTMASTG" not in text and "STG.E.128" in text, f"{where}: not stored from registers"
    if not p.tma and not p.store_tma:
        assert "UTMA" not in text, f"{where}: a TMA access left"
        used = resources(cubin)
        assert used is not None
        assert used.threads == 32 * dict(p.hints).get("num_worker_warps", 4), where


# The benchmark's configurations (benchmarks/attention.py, benchmarks/fp8_gemm.py): each
# keeps its accumulators in registers. A spill (STL/LDL, local memory) in these kernels came
# from a device check in attention's key loop, or from one warpgroup holding a 128x128 f8
# accumulator twice (the MMA's partial sums and the f32 sum).
NO_SPILL = [
    ("attention", "attention", {"num_ctas": 2, "occupancy": 2}, {"BM": 128, "BN": 128, "D": 128}),
    ("attention", "attention_causal", {"num_ctas": 2, "occupancy": 2},
     {"BM": 128, "BN": 128, "D": 128}),
    ("attention", "attention_causal", {"occupancy": 4}, {"BM": 64, "BN": 64, "D": 64}),
    ("attention", "attention_causal", {"occupancy": 4}, {"BM": 64, "BN": 64, "D": 128}),
    ("fp8_gemm", "fp8_gemm_persistent", {"num_worker_warps": 8},
     {"BM": 128, "BN": 128, "BK": 128, "G": 8}),
    ("fp8_gemm", "fp8_gemm_persistent", {"num_ctas": 2, "num_worker_warps": 8},
     {"BM": 128, "BN": 256, "BK": 128, "G": 8}),
]


@pytest.mark.parametrize(("example", "kernel", "hints", "consts"), NO_SPILL)
def test_benchmarked_configs_do_not_spill(example: str, kernel: str, hints: dict[str, int],
                                          consts: dict[str, int]) -> None:
    k: Any = getattr(load(example), kernel).with_hints(**hints)
    text = sass_of(k.compile(target="sm_90", **consts).cubin)
    assert "GMMA" in text, f"{example}.{kernel}: no warpgroup MMA"
    spills = [line for line in text.splitlines() if " STL" in line or " LDL" in line]
    assert not spills, f"{example}.{kernel} {hints}: {len(spills)} local-memory accesses"


# Candidates of benchmarks/norms.py (2026-12) that the lead times on the H200, as
# (example, variant, dtype, n, BM, hints): without a spill, with 128-bit loads and stores
# straight to and from registers, and with the barriers they were picked for. One worker
# warp: the reductions are warp shuffles only (no BAR.SYNC, no shared memory). LayerNorm's
# "shifted" variant: its sum and sum of squares reduced in one round, as RMSNorm's one sum
# (2 BAR.SYNC against the two-round kernel's 5).
ONE_WARP = [("softmax", "bf16", 1024, 1, 8), ("softmax", "bf16", 1024, 2, 8),
            ("rmsnorm", "bf16", 1024, 1, 8), ("layernorm", "bf16", 1024, 1, 8),
            ("softmax", "f32", 4096, 1, None), ("rmsnorm", "bf16", 4096, 1, None)]
SHIFTED = [("bf16", 1024, 4, {"occupancy": 4}),
           ("bf16", 4096, 1, {"num_worker_warps": 8, "occupancy": 5}),
           ("bf16", 16384, 1, {"num_worker_warps": 16, "occupancy": 2}),
           ("f32", 16384, 1, {"num_worker_warps": 32}),
           ("bf16", 32768, 1, {"num_worker_warps": 32})]


def _direct(example: str, key: Any, dtype: str, n: int, bm: int, hints: dict[str, int]
            ) -> str:
    from cutile.core import bf16, f32

    dt = {"bf16": bf16, "f32": f32}[dtype]
    k = load(example).KERNELS[(dt, key)].with_hints(**hints)
    text = sass_of(k.compile(target="sm_90", BM=bm, BN=n, TMA=False, STORE_TMA=False).cubin)
    where = f"{example} {key} {dtype} {n} BM={bm} {hints}"
    assert "LDG.E.128" in text and "STG.E.128" in text, f"{where}: not 128-bit"
    assert "UTMA" not in text, f"{where}: a TMA access"
    assert not re.search(r"\bLDL\b", text), f"{where}: spills"
    return text


@pytest.mark.parametrize(("example", "dtype", "n", "bm", "occupancy"), ONE_WARP)
def test_one_warp_rows_reduce_without_barriers(example: str, dtype: str, n: int, bm: int,
                                               occupancy: int | None) -> None:
    hints = {"num_worker_warps": 1} | ({"occupancy": occupancy} if occupancy else {})
    text = _direct(example, False, dtype, n, bm, hints)
    assert "BAR.SYNC" not in text and "SHFL.BFLY" in text, f"{example}: a block barrier"
    assert not re.search(r"\b(LDS|STS)\b", text), f"{example}: a shared-memory exchange"


@pytest.mark.parametrize(("dtype", "n", "bm", "hints"), SHIFTED)
def test_layernorm_shifted_reduces_in_one_round(dtype: str, n: int, bm: int,
                                                hints: dict[str, int]) -> None:
    shifted = _direct("layernorm", "shifted", dtype, n, bm, hints)
    bars = len(re.findall(r"BAR\.SYNC", shifted))
    assert bars == 2, f"layernorm shifted {dtype} {n} {hints}: {bars} BAR.SYNC"


# The "gather" variants (examples/row_kernels/loads.py) in bf16, as benchmarks/norms.py's
# GATHER_CONFIGS: (example, variant, n, BM, weights through TMA, hints). The padded tile
# load of a bf16 row is assembled with the conversion to f32 inside each 16-byte chunk's
# guard, so the chunks arrive one round trip after another (RMSNorm 4k, 4 warps: 1 load
# issued before the first conversion, of 4); a gather's predicated loads go out together.
GATHER = [("softmax", "gather", 1024, 2, False, {"occupancy": 8}),
          ("softmax", "gather", 4096, 1, False, {"occupancy": 6}),
          ("softmax", "gather", 16384, 1, False, {"num_worker_warps": 16, "occupancy": 2}),
          ("softmax", "gather", 32768, 1, False, {"num_worker_warps": 16}),
          ("softmax", "gather", 32768, 1, False, {"num_ctas": 2, "num_worker_warps": 16}),
          ("rmsnorm", "gather", 1024, 1, False, {"num_worker_warps": 1, "occupancy": 16}),
          ("rmsnorm", "gather", 4096, 1, False, {"occupancy": 6}),
          ("rmsnorm", "gather", 4096, 1, True, {"occupancy": 6}),
          ("rmsnorm", "gather", 4096, 1, False, {"num_worker_warps": 8, "occupancy": 8}),
          ("rmsnorm", "gather", 16384, 1, True, {"num_worker_warps": 16, "occupancy": 2}),
          ("rmsnorm", "gather", 32768, 1, False, {"num_worker_warps": 16}),
          ("layernorm", "gather", 4096, 1, False, {"occupancy": 6}),
          ("layernorm", "gather_shifted", 4096, 1, False, {"occupancy": 8}),
          ("layernorm", "gather_shifted", 16384, 1, False, {"num_worker_warps": 16,
                                                             "occupancy": 2}),
          ("layernorm", "gather", 32768, 1, False, {"num_worker_warps": 16})]


def loads_before_first_conversion(text: str) -> int:
    """How many 16-byte global loads the kernel issues before its first bf16 unpacking
    (PRMT): the row's loads in flight together before a thread waits for one."""
    count = 0
    for line in text.splitlines():
        if re.search(r"\bLDG\.E\.128\b", line):
            count += 1
        elif re.search(r"\bPRMT\b", line):
            break
    return count


@pytest.mark.parametrize(("example", "variant", "n", "bm", "tma", "hints"), GATHER)
def test_gathered_bf16_rows_load_in_one_round_trip(example: str, variant: str, n: int,
                                                   bm: int, tma: bool,
                                                   hints: dict[str, int]) -> None:
    from cutile.core import bf16

    k = load(example).KERNELS[(bf16, variant)].with_hints(**hints)
    text = sass_of(k.compile(target="sm_90", BM=bm, BN=n, TMA=tma, STORE_TMA=False).cubin)
    where = f"{example} {variant} bf16 {n} BM={bm} tma={tma} {hints}"
    assert "STG.E.128" in text and "UTMASTG" not in text, f"{where}: not stored from registers"
    assert ("UTMALDG" in text) == tma, f"{where}: the weights' TMA load"
    assert not re.search(r"\bLDL\b", text), f"{where}: spills"
    threads = 32 * hints.get("num_worker_warps", 4) * hints.get("num_ctas", 1)
    chunks = bm * n * 2 // 16 // threads          # the row's 16-byte loads per thread
    issued = loads_before_first_conversion(text)
    assert issued >= max(2, chunks // 2), f"{where}: {issued} of {chunks} loads in flight"


def test_the_padded_bf16_tile_load_waits_chunk_by_chunk() -> None:
    """Why the gather variants exist, on today's tileiras: RMSNorm's padded tile load at 4k
    over 4 warps (4 chunks a thread) converts the first chunk before it loads the second.
    When this fails, tileiras has learnt to keep them in flight: time the plain kernels
    against the gather variants again (benchmarks/norms.py --variants row,gather)."""
    from cutile.core import bf16

    k = load("rmsnorm").KERNELS[(bf16, False)].with_hints(occupancy=6)
    text = sass_of(k.compile(target="sm_90", BM=1, BN=4096, TMA=False, STORE_TMA=False).cubin)
    assert loads_before_first_conversion(text) == 1
