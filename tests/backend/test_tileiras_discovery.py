"""Finding tileiras: $CUTILE_TILEIRAS, then the pip wheels, then PATH, then $CUDA_HOME/bin.

The lower rungs are exercised with small executables written into temporary directories
(real programs that print what a tileiras would), so discovery and output parsing run
exactly as they do against the real tool.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cutile.backend.bytecode import BytecodeVersion
from cutile.backend.tileiras import (
    find_pip_tileiras,
    find_tileiras,
    list_versions,
    max_supported_version,
    tileiras_version,
)
from cutile.errors import CompileError

FAKE = """#!/bin/sh
case "$1" in
  --version) echo "tileiras: NVIDIA (R) Cuda Tile IR optimizing assembler"
             echo "Cuda compilation tools, release {release}, V{release}.1" ;;
  --list-versions) printf '13.1\\n13.2\\n13.3\\n13.4\\n' ;;
  *) echo "CUDA_HOME=${{CUDA_HOME:-unset}}" ;;
esac
"""


def fake_tool(directory: Path, release: str = "13.4") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tileiras"
    path.write_text(FAKE.format(release=release))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def three_tools(tmp_path: Path) -> dict[str, Path]:
    return {
        "override": fake_tool(tmp_path / "override", "13.4"),
        "path": fake_tool(tmp_path / "onpath", "13.4"),
        "cuda_home": fake_tool(tmp_path / "cuda" / "bin", "13.4"),
    }


def env_for(
    tools: dict[str, Path], *, override: bool, on_path: bool, cuda_home: bool
) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin"}
    if override:
        env["CUTILE_TILEIRAS"] = str(tools["override"])
    if on_path:
        env["PATH"] = f"{tools['path'].parent}:{env['PATH']}"
    if cuda_home:
        env["CUDA_HOME"] = str(tools["cuda_home"].parent.parent)
    return env


def test_override_beats_path_and_cuda_home(three_tools: dict[str, Path]) -> None:
    found = find_tileiras(env_for(three_tools, override=True, on_path=True, cuda_home=True),
                          use_pip=False)  # fmt: skip
    assert (found.path, found.source) == (three_tools["override"], "CUTILE_TILEIRAS")


def test_path_beats_cuda_home(three_tools: dict[str, Path]) -> None:
    found = find_tileiras(env_for(three_tools, override=False, on_path=True, cuda_home=True),
                          use_pip=False)  # fmt: skip
    assert (found.path, found.source) == (three_tools["path"], "PATH")


def test_cuda_home_is_the_last_resort(three_tools: dict[str, Path]) -> None:
    found = find_tileiras(env_for(three_tools, override=False, on_path=False, cuda_home=True),
                          use_pip=False)  # fmt: skip
    assert (found.path, found.source) == (three_tools["cuda_home"], "CUDA_HOME")
    # Found through CUDA_HOME, the tool keeps CUDA_HOME: that is where its ptxas lives.
    assert found.run(["x"]).stdout.strip() == f"CUDA_HOME={three_tools['cuda_home'].parent.parent}"


def test_nothing_found_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(CompileError) as err:
        find_tileiras({"PATH": str(tmp_path)}, use_pip=False)
    assert err.value.code == "CT7001"
    assert "pip install 'cutile[tileiras]'" in str(err.value)


def test_override_that_is_not_executable_is_an_error(tmp_path: Path) -> None:
    target = tmp_path / "tileiras"
    target.write_text("not a program")
    with pytest.raises(CompileError) as err:
        find_tileiras({"CUTILE_TILEIRAS": str(target), "PATH": ""}, use_pip=False)
    assert err.value.code == "CT7002"


def test_version_and_list_versions_are_parsed(three_tools: dict[str, Path]) -> None:
    tool = find_tileiras(env_for(three_tools, override=True, on_path=False, cuda_home=False),
                         use_pip=False)  # fmt: skip
    assert tileiras_version(tool) == "Cuda compilation tools, release 13.4, V13.4.1"
    assert list_versions(tool) == ["13.1", "13.2", "13.3", "13.4"]
    assert max_supported_version(tool) == BytecodeVersion(13, 4)


def test_assembler_too_old_for_sm_90_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "tileiras"
    path.write_text("#!/bin/sh\nprintf '13.1\\n13.2\\n'\n")
    path.chmod(0o755)
    tool = find_tileiras({"CUTILE_TILEIRAS": str(path)}, use_pip=False)
    with pytest.raises(CompileError, match=r"13\.3"):
        max_supported_version(tool)


@pytest.mark.tileiras
def test_pip_wheels_beat_path_and_cuda_home_and_drop_cuda_home(
    three_tools: dict[str, Path],
) -> None:
    pip = find_pip_tileiras()
    if pip is None:
        pytest.skip("tileiras not installed from pip wheels")
    env = env_for(three_tools, override=False, on_path=True, cuda_home=True)
    env["CUDA_PATH"] = "/somewhere"
    env["SOMETHING_ELSE"] = "kept"
    found = find_tileiras(env)
    assert (found.path, found.source) == (pip, "pip")
    assert "CUDA_HOME" not in found.env and "CUDA_PATH" not in found.env
    assert found.env["SOMETHING_ELSE"] == "kept"  # everything else passes through


@pytest.mark.tileiras
def test_an_explicit_cutile_tileiras_wins_over_the_pip_wheels(
    three_tools: dict[str, Path],
) -> None:
    # Setting CUTILE_TILEIRAS is a deliberate choice (a newer or patched assembler): the
    # installed wheels must not silently win over it.
    if find_pip_tileiras() is None:
        pytest.skip("tileiras not installed from pip wheels")
    env = env_for(three_tools, override=True, on_path=True, cuda_home=True)
    found = find_tileiras(env)
    assert (found.path, found.source) == (three_tools["override"], "CUTILE_TILEIRAS")
    assert tileiras_version(found) == "Cuda compilation tools, release 13.4, V13.4.1"


@pytest.mark.tileiras
def test_installed_assembler_reads_13_3_and_newer() -> None:
    tool = find_tileiras()
    assert "release" in tileiras_version(tool)
    assert max_supported_version(tool) >= BytecodeVersion(13, 3)
    assert os.access(tool.path, os.X_OK)
