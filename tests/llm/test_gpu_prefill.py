"""On the GPU: the prefill variants at Qwen3-4B's shapes (two layers, random weights), a
300-token prompt (ragged against every 128-row tile), each filling the KV caches the numpy
reference computes: the hinted configurations (two consumer warpgroups, 2-CTA clusters,
persistent schedules, split-K atomic adds into the residual
stream) only differ from the interpreter's runs on the device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def four_b() -> tuple[Any, Any, list[int], list[np.ndarray]]:
    from llm.config import preset, with_layers
    from llm.plan import plan_for
    from llm.reference import Reference
    from llm.weights import random_weights

    cfg = with_layers(preset("qwen3-4b"), 2)
    w = random_weights(cfg, seed=3)
    prompt = [int(t) for t in np.random.default_rng(4).integers(0, cfg.vocab_size, 301)]
    ref = Reference(cfg, w.to_hf(), 512, prefill_block=plan_for(cfg).prefill.attn_bm)
    ref.forward(np.array(prompt[:-1]), 0, prefill=True)
    return cfg, w, prompt, ref.k + ref.v


@pytest.mark.parametrize("variant", ["old", "new", "persistent", "wide", "splitk",
                                     "splitk2", "hybrid", "streamk"])
def test_prefill_variant_fills_the_reference_caches(
        four_b: tuple[Any, Any, list[int], list[np.ndarray]], variant: str) -> None:
    from llm.model import Engine
    from llm.plan import plan_for

    cfg, w, prompt, want = four_b
    eng = Engine(w, 512, plan_for(cfg, prefill=variant))
    eng.load_prompt(prompt)
    n = len(prompt) - 1
    for got, ref in zip(eng.k_cache + eng.v_cache, want, strict=True):
        g = got.numpy().astype(np.float32)
        np.testing.assert_allclose(g[:, :n], ref[:, :n], rtol=5e-2, atol=5e-2)
        assert not g[:, n:].any()
