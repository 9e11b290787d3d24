"""On the GPU: the engine against Hugging Face transformers' Qwen3ForCausalLM with the same
random weights (a few layers of Qwen3-0.6B's shapes, so the real head_dim, GQA group and
vocabulary are exercised): logits within bf16 tolerance and the same greedy tokens
(`benchmarks/llm_hf_check.py` runs the full-size check)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_engine_matches_transformers() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    sys.path.insert(0, str(BENCHMARKS))
    import llm_hf_check
    from llm.config import preset, with_layers

    r = llm_hf_check.check(with_layers(preset("qwen3-0.6b"), 3), steps=16, prompt_len=24)
    assert llm_hf_check.verdict(r, tol=5e-2, greedy_steps=16) == [], r
    # teacher-forced, any step whose token is not transformers' argmax is a near-tie
    assert all(g < 1e-2 for d in ("bf16", "f32") for g in r[d]["argmax_disagree_gaps"]), r
