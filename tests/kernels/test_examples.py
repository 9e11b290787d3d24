"""Every example runs correctly on the active backend, and every example kernel assembles to
an sm_90 cubin with the real tileiras (no GPU needed for that)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from kernel_source import EXAMPLES, load_example

import cutile

# kernel -> Const values for an ahead-of-time build of each example kernel
AOT: dict[str, dict[str, dict[str, Any]]] = {
    "add": {"add": {"B": 1024}},
    "autotune_gemm": {"gemm": {"BM": 64, "BN": 64, "BK": 32}},
    "saxpy": {"saxpy": {"B": 512}},
    "exp2d": {"exp2d": {"BM": 64, "BN": 128}},
    "head_permute": {"permute_heads": {"H": 8, "BM": 32, "D": 64}},
    "attention": {"attention": {"BM": 128, "BN": 64, "D": 128},
                  "attention_causal": {"BM": 128, "BN": 128, "D": 64},
                  "attention_even": {"BM": 128, "BN": 64, "D": 128},
                  "attention_causal_even": {"BM": 128, "BN": 128, "D": 64}},
    "softmax": {"softmax": {"BM": 4, "BN": 1024, "TMA": False, "STORE_TMA": False},
                "softmax_looped_bf16": {"BM": 1, "BN": 32768, "BK": 2048}},
    "layernorm": {"layernorm_bf16": {"BM": 4, "BN": 1024, "TMA": True, "STORE_TMA": True},
                  "layernorm_looped": {"BM": 1, "BN": 32768, "BK": 2048}},
    "rmsnorm": {"rmsnorm_bf16": {"BM": 4, "BN": 1024, "TMA": False,
                                 "STORE_TMA": False},
                "rmsnorm_looped": {"BM": 1, "BN": 32768, "BK": 2048}},
    "persistent_gemm": {"persistent_gemm": {"BM": 128, "BN": 128, "BK": 64}},
    "batched_gemm": {"batched_gemm": {"BM": 128, "BN": 128, "BK": 64}},
    "split_k_gemm": {"split_k_gemm": {"BM": 64, "BN": 64, "BK": 64}},
    "embedding": {"embedding": {"BT": 32, "BD": 128}},
    "swiglu_mlp": {"swiglu_up": {"BM": 128, "BF": 128, "BK": 64},
                   "down_proj": {"BM": 128, "BN": 128, "BK": 64}},
    "histogram": {"histogram": {"B": 1024}, "histogram_local": {"B": 1024, "NB": 64}},
    "topk": {"topk": {"BM": 4, "K": 8, "BN": 1024}},
    "streams": {"affine": {"B": 1024}, "blend": {"B": 1024}},
    "async_pipeline": {"smooth": {"B": 1024}},
    "cuda_graph": {"linear_relu": {"BM": 64, "BN": 64, "BK": 64}},
    "fp8_gemm": {"quantize_rows": {"K": 1024}, "fp8_gemm": {"BM": 128, "BN": 128, "BK": 64},
                 "fp8_gemm_persistent": {"BM": 128, "BN": 128, "BK": 128, "G": 8}},
    "raw_kernel": {"affine": {"B": 1024}},
    "interop_torch": {"gated": {"BM": 64, "BN": 128}},
    "multi_gpu": {"gemm": {"BM": 128, "BN": 128, "BK": 64}},
}
# smaller problems on the interpreter keep the suite fast
SMALL: dict[str, dict[str, Any]] = {
    "add": {"n": 100_003, "tile": 1024},
    "autotune_gemm": {"m": 130, "n": 70, "k": 40},
    "saxpy": {"n": 50_001, "tile": 512},
    "exp2d": {"m": 200, "n": 300},
    "head_permute": {"b": 2, "h": 4, "m": 128, "d": 64, "bm": 32},
    "attention": {"bh": 2, "seqs": (100, 128), "d": 32},
    "softmax": {"m": 37, "n": 100, "long_n": 700, "bk": 128},
    "layernorm": {"m": 37, "n": 100, "long_n": 700, "bk": 128},
    "rmsnorm": {"m": 37, "n": 100, "long_n": 700, "bk": 128},
    "persistent_gemm": {"m": 130, "n": 100, "k": 40, "blocks": 3},
    "batched_gemm": {"batch": 2, "m": 70, "n": 40, "k": 24},
    "split_k_gemm": {"m": 70, "n": 40, "k": 300, "splits": 4},
    "embedding": {"tokens": 70, "vocab": 50, "d": 40},
    "swiglu_mlp": {"m": 70, "d": 40, "f": 100},
    "histogram": {"n": 3000, "bins": 13, "tile": 256},
    "topk": {"m": 37, "n": 100, "k": 3, "bm": 8},
    "streams": {"n": 5000, "tile": 256, "length": 3},
    "async_pipeline": {"n": 5000, "batches": 3, "steps": 8, "tile": 512},
    "cuda_graph": {"m": 40, "d": 48, "layers": 3, "replays": 3, "tiles": (16, 16, 16)},
    "fp8_gemm": {"m": 100, "n": 70, "k": 96, "bm": 32, "bn": 32, "bk": 32, "blocks": 3},
    "raw_kernel": {"n": 20_001, "tile": 512},
    "interop_torch": {"m": 100, "n": 70, "bm": 32, "bn": 32},
    "multi_gpu": {"m": 96, "n": 64, "k": 48, "tiles": (32, 32, 16), "chunks": 2, "reps": 1},
}


def load(name: str) -> ModuleType:
    return load_example(name)


def test_every_example_is_listed() -> None:
    found = {p.stem for p in EXAMPLES.glob("*.py")}
    assert found == set(AOT), "add new examples to AOT and SMALL"


@pytest.mark.parametrize("name", sorted(AOT))
def test_example_runs_and_checks_itself(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    mod = load(name)
    mod.main(**SMALL[name])  # each example asserts every element itself
    assert capsys.readouterr().out.startswith(f"{name}:")


@pytest.mark.tileiras
@pytest.mark.parametrize(("name", "kernel"), [(m, k) for m, ks in AOT.items() for k in ks])
def test_example_kernel_assembles_to_sm90(name: str, kernel: str) -> None:
    mod = load(name)
    k = getattr(mod, kernel)
    assert isinstance(k, cutile.EntryKernel)
    compiled = k.compile(target="sm_90", **AOT[name][kernel])
    assert compiled.cubin[:4] == b"\x7fELF"
    assert compiled.bytecode[:8] == b"\x7fTileIR\x00"
    from cutile.backend.tileiras import find_tileiras

    if not find_tileiras().disassembler.exists():
        pytest.skip("tileirdisasm is not installed next to tileiras")
    text = compiled.ir_text()
    assert f"entry @{k.name}" in text
    assert "load_view_tko" in text
    assert "store_view_tko" in text or "atomic_rmw_tko" in text  # outputs: tiles or atomics
    assert "assume div_by<16>" in text  # base pointers are known 16-byte aligned


@pytest.mark.nvrtc
def test_the_raw_kernel_example_builds_its_cpp_for_sm90() -> None:
    binary = load("raw_kernel").clip_count.compile("sm_90")
    assert binary.cubin[:4] == b"\x7fELF" and binary.symbol == "clip_count"
