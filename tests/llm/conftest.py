"""The Qwen3 engine's tests import it from examples/llm (an application, not a package of
cutile): put examples/ on the path, and share the tiny model's random weights."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="session")
def tiny() -> Any:
    from llm.config import preset

    return preset("tiny")


@pytest.fixture(scope="session")
def tiny_weights(tiny: Any) -> Any:
    from llm.weights import random_weights

    return random_weights(tiny, seed=7)


@pytest.fixture(scope="session")
def tiny_hf(tiny_weights: Any) -> dict[str, Any]:
    """The tiny model's weights under Hugging Face's names (numpy bf16)."""
    return tiny_weights.to_hf()


# The prefill tests' prompt: 38 tokens, 37 of them prefilled (ragged against every 16-row
# tile), and the reference model's K/V caches after those 37, for an engine of
# PREFILL_MAX_SEQ positions.
PREFILL_MAX_SEQ = 64


@pytest.fixture(scope="module")
def prompt() -> list[int]:
    import numpy as np

    return [int(t) for t in np.random.default_rng(5).integers(0, 320, 38)]


@pytest.fixture(scope="module")
def want(tiny: Any, tiny_hf: dict[str, Any], prompt: list[int]) -> list[Any]:
    import numpy as np
    from llm.plan import plan_for
    from llm.reference import Reference

    ref = Reference(tiny, tiny_hf, PREFILL_MAX_SEQ,
                    prefill_block=plan_for(tiny).prefill.attn_bm)
    ref.forward(np.array(prompt[:-1]), 0, prefill=True)
    return list(ref.k + ref.v)
