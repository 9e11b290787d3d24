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
