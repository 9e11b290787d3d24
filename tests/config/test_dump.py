"""CUTILE_DUMP writes each named stage of every compiled kernel: what was checked (kernel
AST, facts), what was lowered (Tile IR, bytecode) and what tileiras made of it (cubin,
SASS), one readable file per stage and specialization."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import cutile
from cutile import api, dump
from cutile.backend.cache import MEMORY
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import ConfigError
from cutile.runtime import driver


def copy(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z))


@pytest.fixture
def dump_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    out = tmp_path / "dumps"
    monkeypatch.setenv("CUTILE_DUMP_DIR", str(out))
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    MEMORY.clear()
    yield out
    MEMORY.clear()


def files(directory: Path) -> dict[str, Path]:
    """Stage suffix -> file, checking that every file belongs to one specialization."""
    found = sorted(directory.iterdir())
    stems = {".".join(p.name.split(".")[:2]) for p in found}
    assert len(stems) == 1, stems
    (stem,) = stems
    assert stem.startswith("copy.") and len(stem.split(".")[1]) == 12
    return {p.name[len(stem) + 1 :]: p for p in found}


def check_front_stages(got: dict[str, Path], b: int) -> None:
    kast = json.loads(got["kast.json"].read_text())
    assert kast["entry"] == "copy"
    facts = json.loads(got["facts.json"].read_text())
    assert facts["accepted"] and facts["specialization"]["consts"] == [["B", b]]
    assert facts["obligations"] and facts["outputs"] == [{"param": "z", "launch": "partitioned"}]
    assert "entry @copy" in got["ir.txt"].read_text()
    assert got["tilebc"].read_bytes().startswith(b"\x7fTileIR\x00")


@pytest.mark.tileiras
def test_every_stage_of_a_compile(dump_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_DUMP", "kast,facts,ir,bytecode,cubin,sass")
    compiled = cutile.entry(copy).compile(B=128)
    got = files(dump_dir)
    assert set(got) == {"kast.json", "facts.json", "ir.txt", "tilebc", "cubin", "sass"}
    assert all(p.stat().st_size > 0 for p in got.values())
    check_front_stages(got, 128)
    assert got["tilebc"].read_bytes() == compiled.bytecode
    assert got["cubin"].read_bytes() == compiled.cubin
    assert "sm_90" in got["sass"].read_text()


def test_stages_with_a_stand_in_assembler(dump_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                          fake_tileiras: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    # No cuobjdump beside the stand-in or on PATH: the SASS stage is skipped with a note.
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("CUTILE_DUMP", "all")
    caplog.set_level(logging.INFO, logger="cutile.dump")
    cutile.entry(copy).compile(B=64)
    got = files(dump_dir)
    assert set(got) == {"kast.json", "facts.json", "ir.txt", "tilebc", "cubin"}
    check_front_stages(got, 64)
    assert got["cubin"].read_bytes().startswith(b"FAKECUBIN sm_90")
    assert "no sass dump: cuobjdump" in caplog.text


def test_only_the_named_stages_and_the_default_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_tileiras: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUTILE_DUMP_DIR", raising=False)
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("CUTILE_CACHE_DIR", "off")
    monkeypatch.setenv("CUTILE_DUMP", " IR , facts")
    cutile.entry(copy).compile(B=32)
    assert set(files(tmp_path / "cutile-dump")) == {"ir.txt", "facts.json"}


def test_two_specializations_get_two_sets_of_files(dump_dir: Path, fake_tileiras: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("CUTILE_DUMP", "ir")
    kernel = cutile.entry(copy)
    kernel.compile(B=16)
    kernel.compile(B=32)
    assert len(list(dump_dir.glob("copy.*.ir.txt"))) == 2


def test_an_unknown_stage_is_a_typed_error(monkeypatch: pytest.MonkeyPatch, dump_dir: Path,
                                           fake_tileiras: Path) -> None:
    monkeypatch.setenv("CUTILE_TILEIRAS", str(fake_tileiras))
    monkeypatch.setenv("CUTILE_DUMP", "ir,ptx")
    with pytest.raises(ConfigError) as err:
        cutile.entry(copy).compile(B=8)
    assert err.value.code == "CT8005" and "`ptx`" in str(err.value)
    assert "`sass`" in str(err.value)  # the hint lists the stages
    assert not dump_dir.exists()


def test_an_interpreted_launch_dumps_what_it_has(dump_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("CUTILE_DUMP", "all")
    caplog.set_level(logging.INFO, logger="cutile.dump")
    driver.reset_for_tests("interpreter")
    try:
        z = api.zeros([256], f32).partition([128])
        x = api.from_numpy(np.arange(256, dtype=np.float32))
        z, _ = cutile.entry(copy)(z, x).sync()
    finally:
        driver.reset_for_tests(None)
    assert (z.unpartition().to_numpy() == np.arange(256)).all()
    got = files(dump_dir)
    assert set(got) == {"kast.json", "facts.json", "ir.txt", "tilebc"}
    check_front_stages(got, 128)
    assert "CPU interpreter" in caplog.text


def test_stage_names() -> None:
    assert dump.requested({}) == frozenset()
    assert dump.requested({"CUTILE_DUMP": "all"}) == frozenset(dump.STAGES)
    assert dump.requested({"CUTILE_DUMP": "kast,,sass"}) == {"kast", "sass"}


@pytest.mark.parametrize(("used", "blocks"), [
    (dump.Resources(64, 17480, 0, 256), 4),     # registers: 8 warps of 64 a thread
    (dump.Resources(41, 1040, 0, 128), 10),     # 41 rounds up to 48 a thread
    (dump.Resources(26, 1040, 0, 128), 16),     # threads: 2048 a multiprocessor
    (dump.Resources(32, 100_000, 0, 128), 2),   # shared memory, 1 KB reserved a block
    (dump.Resources(16, 0, 0, 32), 32),         # at most 32 blocks
])
def test_blocks_per_multiprocessor(used: dump.Resources, blocks: int) -> None:
    assert used.blocks_per_sm() == blocks


def hinted_copy(z: Mut[Tensor[f32, ["BM", "BN"]]], x: Tensor[f32, [-1, -1]], BM: Const[int],
                BN: Const[int], TMA: Const[bool]):
    t = load_tile_like(x, z, allow_tma=TMA)
    z.store(t / t.sum(axis=1, keepdims=True), allow_tma=TMA)


@pytest.mark.tileiras
def test_resources_of_a_cubin() -> None:
    # With no TMA access the block is its 4 worker warps; TMA brings a producer warpgroup
    # and the tile staged in shared memory.
    k = cutile.entry(hinted_copy)
    got = {tma: dump.resources(k.compile("sm_90", BM=8, BN=1024, TMA=tma).cubin)
           for tma in (False, True)}
    if got[False] is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    off, on = got[False], got[True]
    assert on is not None
    assert off.threads == 128 and on.threads == 256
    assert off.shared < 4096 < 8 * 1024 * 4 <= on.shared
    assert 0 < off.registers <= 255 and off.local == 0
    assert off.blocks_per_sm() >= 1
