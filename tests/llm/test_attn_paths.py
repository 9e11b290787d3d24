"""The engine on the latency attention paths (`Plan.attn_path` "heads", "fused" and
"ahead", every named variant of `SMALL_VARIANTS`: TMA on and off, one or four worker warps,
other tile and split counts): the tiny model decodes the numpy reference's tokens, logits
to f32 summation order against the default path, one kernel less per layer on "fused",
through a captured graph too; and the plan checks."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from llm import attn_paths
from llm.config import preset
from llm.model import Engine
from llm.plan import ATTN_PATHS, SMALL_VARIANTS, plan_for
from llm.reference import Reference
from test_engine import MAX_SEQ, NEW, PROMPT


def engine(weights: Any, tiny: Any, variant: str, max_seq: int = MAX_SEQ,
           exact: bool = True) -> Engine:
    """An engine on a named variant (`SMALL_VARIANTS`) or a bare attention path; `exact`:
    attention's MMAs with f32-accurate inputs (`Plan.attn_exact`), so the logits agree
    with the split path's to the summation order."""
    changes = SMALL_VARIANTS.get(variant, {"attn_path": variant})
    return Engine(weights, max_seq, plan_for(tiny).with_(attn_exact=exact, **changes))


def decode(eng: Engine, prompt: list[int], new: int) -> tuple[list[int], list[np.ndarray]]:
    eng.load_prompt(prompt)
    logits = []
    for _ in range(new):
        eng.decode_step()
        logits.append(eng.read_logits())
    return [int(t) for t in eng.token_ids()], logits


@pytest.fixture(scope="module")
def split_path(tiny: Any, tiny_weights: Any) -> tuple[list[int], list[np.ndarray]]:
    """The split path's tokens and logits (f32-accurate attention)."""
    return decode(Engine(tiny_weights, MAX_SEQ, plan_for(tiny).with_(attn_path="split")),
                  PROMPT, NEW)


@pytest.fixture(scope="module")
def reference_tokens(tiny: Any, tiny_hf: dict[str, Any]) -> list[int]:
    tokens, _ = Reference(tiny, tiny_hf, MAX_SEQ,
                          prefill_block=plan_for(tiny).prefill.attn_bm).generate(PROMPT, NEW)
    return tokens


@pytest.mark.parametrize("variant", list(SMALL_VARIANTS))
def test_latency_paths_decode_the_reference_tokens(
        tiny: Any, tiny_weights: Any, split_path: tuple[list[int], list[np.ndarray]],
        reference_tokens: list[int], variant: str) -> None:
    eng = engine(tiny_weights, tiny, variant)
    path = eng.plan.attn_path
    eng.load_prompt(PROMPT)
    ops = eng.ops
    logits = []
    for _ in range(NEW):
        eng.decode_step()
        logits.append(eng.read_logits())
    per_layer = 4 + len(ATTN_PATHS[path])      # QKV, o_proj, gate/up, down + the path's
    assert (eng.ops - ops) / NEW == 2 + per_layer * tiny.num_layers + 1
    assert [int(t) for t in eng.token_ids()] == reference_tokens == split_path[0]
    from cutile.runtime import driver

    for got, want in zip(logits, split_path[1], strict=True):
        if driver.backend() == "interpreter":
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        else:  # the GPU's atomic residual adds sum in any order: bf16-level agreement
            np.testing.assert_allclose(got, want, rtol=2e-2,
                                       atol=2e-2 * float(np.abs(want).max()))


@pytest.mark.parametrize("path", ["heads", "fused", "ahead"])
def test_bf16_attention_decodes_the_reference_tokens(
        tiny: Any, tiny_weights: Any, split_path: tuple[list[int], list[np.ndarray]],
        reference_tokens: list[int], path: str) -> None:
    """`attn_exact` off (every real config's default): q and the probabilities enter the
    MMAs as bf16, as in torch's SDPA; the same tokens, logits within bf16's rounding of the
    exact path."""
    eng = engine(tiny_weights, tiny, path, exact=False)
    assert plan_for(tiny).attn_exact and not plan_for(preset("qwen3-4b")).attn_exact
    tokens, logits = decode(eng, PROMPT, NEW)
    assert tokens == reference_tokens
    exact_logits = split_path[1]
    scale = max(float(np.abs(w).max()) for w in exact_logits)
    worst = max(float(np.abs(g - w).max()) for g, w in zip(logits, exact_logits, strict=True))
    assert worst <= 2e-2 * scale
    assert worst > 0.0                  # bf16 inputs: not the exact path under another name


@pytest.mark.parametrize("path", ["heads", "fused", "ahead"])
def test_every_position_through_the_decode_step(tiny: Any, tiny_weights: Any,
                                                tiny_hf: dict[str, Any], path: str) -> None:
    """A one-token prompt: the cache is written only by the decode step's kernels (the
    first step's attention has no cached key: the new one alone)."""
    tokens, logits = decode(engine(tiny_weights, tiny, path), [42], 5)
    want_tokens, want_logits = Reference(tiny, tiny_hf, MAX_SEQ).generate([42], 5)
    assert tokens == want_tokens
    scale = max(float(np.abs(w).max()) for w in want_logits)
    for got, want in zip(logits, want_logits, strict=True):
        assert float(np.abs(got - want).max()) <= 1e-2 * scale


@pytest.mark.parametrize("variant", ["heads", "fused", "ahead"])
def test_latency_paths_in_a_captured_graph(tiny: Any, tiny_weights: Any,
                                           split_path: tuple[list[int], list[np.ndarray]],
                                           variant: str) -> None:
    """The views the paths partition (q per head, the attention output per chunk) are
    taken afresh in every layer of the capture, which holds what the ops read."""
    eng = engine(tiny_weights, tiny, variant)
    eng.load_prompt(PROMPT)
    g = eng.capture_decode()
    assert g.launches == 2 + (4 + len(ATTN_PATHS[variant])) * tiny.num_layers + 1
    for _ in range(NEW):
        g.step().wait()
    tokens = [int(t) for t in g.token_ids()]
    g.close()
    assert tokens == split_path[0]
    eng.decode_step()                          # op by op again, after the graph's steps
    assert eng.position() == len(PROMPT) + NEW


def test_plan_checks_for_the_latency_paths(tiny: Any, tiny_weights: Any) -> None:
    with pytest.raises(ValueError, match="unknown attention path"):
        engine(tiny_weights, tiny, "flash")
    for path in ("fused", "ahead"):
        with pytest.raises(ValueError, match="attn_fused must be off"):
            Engine(tiny_weights, MAX_SEQ,
                   plan_for(tiny, attn_fused=True).with_(attn_path=path))
    with pytest.raises(ValueError, match="does not split into"):
        engine(tiny_weights, tiny, "fused", max_seq=2)     # 2 positions, 4 combine blocks
    three = replace(tiny, num_heads=6)                     # 3 query heads per kv head
    with pytest.raises(ValueError, match="power-of-two group"):
        attn_paths.check(three, plan_for(three).with_(attn_path="heads"), 64)


@pytest.mark.parametrize(("config", "cascade"), [("qwen3-0.6b", True), ("qwen3-4b", True),
                                                 ("qwen3-8b", False)])
def test_the_small_attention_kernels_trigger_first_where_it_measured_faster(
        config: str, cascade: bool) -> None:
    """`plan_for`: the three small kernels of the "heads" path let the output projection
    be scheduled during attention, which loads 4 weight steps ahead of its wait (0.6B and
    4B); on 8B the early-resident blocks slowed its QKV GEMV, so neither."""
    plan = plan_for(preset(config))
    assert plan.attn_path == "heads"
    assert plan.trigger_first == (ATTN_PATHS["heads"] if cascade else ())
    assert plan.early_of("o") == (4 if cascade else plan.early_steps)
    assert plan.early_of("qkv") == plan.early_steps      # the GEMVs still trigger after


def test_the_interpreters_small_configs_keep_the_plain_prologue(tiny: Any) -> None:
    assert plan_for(tiny).trigger_first == ()
