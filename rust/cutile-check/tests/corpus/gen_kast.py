#!/usr/bin/env python3
"""Write the kernel AST JSON of each corpus kernel with cutile's own frontend.

The checked-in `NAME.json` files are what `cargo test -p cutile-check --test corpus`
replays, so the Rust tests run without Python; they must be exactly what the frontend
makes (`tests/native/test_corpus_frontend.py` compares). Regenerate after a change to the
frontend or the schema:

    python gen_kast.py            # every kernel in this folder
    python gen_kast.py a.py b.py  # some

Each corpus file holds one `@cutile.entry` kernel (plus any `@cutile.device` helpers) and a
first line `# expect: ok` or `# expect: CT1002 CT1004` (the codes the checker must report,
in source order). Paths in the JSON are the file names alone, so the JSON does not depend
on where the repository lives.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def kernels() -> list[Path]:
    return sorted(p for p in HERE.glob("*.py") if not p.name.startswith("gen_"))


def kast_json(py: Path) -> str:
    """The frontend's JSON of the file's entry kernel, with file paths made relative."""
    spec = importlib.util.spec_from_file_location(f"corpus_{py.stem}", py)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    entry = next(v for v in vars(mod).values() if hasattr(v, "__cutile_entry__"))
    doc = json.loads(entry.kast_json())
    for f in doc["files"]:
        f["path"] = Path(f["path"]).name
    return json.dumps(doc, separators=(",", ":")) + "\n"


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or kernels()
    for py in paths:
        py.with_suffix(".json").write_text(kast_json(py))
    print(f"wrote {len(paths)} kernel AST documents")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
