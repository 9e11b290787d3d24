"""Every code `python -m cutile explain` lists has a long explanation with an example, and
the explanations of Python's own codes live in `cutile.explanations` (so an installed
package has them, not only a source checkout)."""

from __future__ import annotations

import re

import pytest

from cutile.error_codes import PYTHON_CODES, all_codes, explain
from cutile.explanations import EXPLANATIONS, long_text


def _has_example(text: str) -> bool:
    """An example is a code block: fenced, or indented four spaces after a blank line."""
    return "```" in text or re.search(r"\n\n {4}\S", text) is not None


@pytest.mark.parametrize("code", sorted(all_codes()))
def test_every_listed_code_has_a_long_text_with_an_example(code: str) -> None:
    text = explain(code)
    assert text is not None and text.startswith(f"{code}: ")
    body = text.split("\n", 1)[1] if "\n" in text else ""
    assert len(body.strip().splitlines()) >= 5, f"{code} has no long explanation:\n{text}"
    assert _has_example(body), f"{code}'s explanation has no example:\n{text}"


def test_python_codes_are_explained_in_the_package() -> None:
    assert set(EXPLANATIONS) == set(PYTHON_CODES)
    for code in PYTHON_CODES:
        text = long_text(code)
        assert text is not None and "Example" in text and "Fix:" in text, code
        assert code in text, f"{code}'s example does not show the code it raises"
    assert explain("ct0007") == explain("CT0007")  # case does not matter
    assert explain("CT9999") is None
