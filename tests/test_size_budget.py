"""No source file over 800 lines: a file that grows past it has more than one job and is
split (house style; tinygrad keeps a line budget in CI the same way). Counts every .py, .pyi
and .rs file of the project, tests included; there is no allowlist."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 800
SUFFIXES = {".py", ".pyi", ".rs"}
NOT_SOURCE = {".git", "target", ".venv", "venv", "build", "dist", "node_modules",
              "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis",
              "cutile-dump"}


def source_files() -> list[Path]:
    found: list[Path] = []
    stack = [ROOT]
    while stack:
        for child in stack.pop().iterdir():
            if child.is_dir():
                if child.name not in NOT_SOURCE and not child.name.endswith(".egg-info"):
                    stack.append(child)
            elif child.suffix in SUFFIXES:
                found.append(child)
    return found


def test_no_source_file_is_over_800_lines() -> None:
    files = source_files()
    assert any(f.suffix == ".rs" for f in files) and any(f.suffix == ".py" for f in files)
    too_long = {str(f.relative_to(ROOT)): n for f in files
                if (n := len(f.read_text(errors="replace").splitlines())) > LIMIT}
    assert too_long == {}, f"split these (over {LIMIT} lines): {too_long}"
