"""`benchmarks/llm_small.py` cuts a recorded decode step into layers and each layer's
attention block (QKV GEMV to output projection) by kernel names: checked on the names the
tiny engine's step launches on every attention path (the timing itself needs the GPU)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from llm.model import Engine
from llm.plan import ATTN_PATHS, SMALL_VARIANTS, Plan, plan_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def step_names(weights: Any, cfg: Any, changes: dict[str, object]) -> list[str]:
    eng = Engine(weights, 40, plan_for(cfg).with_(**changes))
    eng.load_prompt([3, 1, 4])
    names: list[str] = []
    eng.observer = lambda kernel, op: names.append(kernel.name)
    eng.decode_step()
    return names


@pytest.mark.parametrize("variant", ["default", *SMALL_VARIANTS])
def test_a_step_splits_into_layers_and_attention_blocks(tiny: Any, tiny_weights: Any,
                                                        variant: str) -> None:
    pytest.importorskip("cuda.bindings")
    import llm_small
    import llm_tools as lt

    changes = SMALL_VARIANTS.get(variant, {})
    names = step_names(tiny_weights, tiny, changes)
    launches = [lt.Launch(n, (1, 1, 1), None, 0) for n in names]
    by_layer = llm_small.layers(launches, tiny.num_layers)
    assert len(by_layer) == tiny.num_layers
    path = str(changes.get("attn_path", Plan.attn_path))  # the dataclass default
    for layer in by_layer:
        block = [x.name for x in llm_small.attention_block(layer)]
        qkv = "gemv_norm_partial" if path == "split" else "gemv_norm_partial_ss"
        assert block == [qkv, *ATTN_PATHS[path], "gemv_add"]
        assert [x.name for x in layer[len(block):]] == ["gemv_swiglu", "gemv_add"]
