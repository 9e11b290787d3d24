"""The examples in the explanations of CT3070-CT3074 (`python -m cutile explain CODE`)
raise the code they show, with the message they quote."""

from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

from cutile.errors import KernelCheckError
from cutile.explanations.tile_pieces import TEXTS


@pytest.mark.parametrize("code", sorted(TEXTS))
def test_the_example_raises_its_code(code: str, tmp_path: Path) -> None:
    text = textwrap.dedent(TEXTS[code])
    example = textwrap.dedent(text.split("Example:")[1].split("Fix:")[0].strip("\n"))
    path = tmp_path / f"example_{code}.py"
    path.write_text("import cutile\nfrom cutile.core import *\n\n" + example + "\n")
    spec = importlib.util.spec_from_file_location(f"example_{code}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(KernelCheckError) as info:
        mod.k.check()
        mod.k.lowered(mod.k.specialization({}))
    assert info.value.codes == [code]
    quoted = re.search(rf"error\[{code}\]: (.*?)(?:\n|$)", example)
    assert quoted is not None
    assert quoted.group(1).strip() in str(info.value)
