"""CI (`.ci/run`) runs exactly the test command the README gives a contributor, so what
passes locally with that command is what CI checks, lints included."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("run the whole test suite"):]
    m = re.search(r"```sh\n(.+?)\n```", section, re.DOTALL)
    assert m, "no ```sh block after 'run the whole test suite' in the README"
    return m[1].strip()


def test_ci_runs_the_readme_command() -> None:
    command = readme_test_command()
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
          if ln.strip() and not ln.lstrip().startswith("#")]
    assert ci[-1] == command


def test_the_readme_command_lints_and_type_checks() -> None:
    command = readme_test_command()
    for step in ("cargo fmt --all --check",
                 "cargo clippy --workspace --all-targets -- -D warnings",
                 "cargo test --workspace", "ruff check python tests examples benchmarks",
                 "mypy --strict python/cutile", "python3 -m pytest"):
        assert step in command, step
