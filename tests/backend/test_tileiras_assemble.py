"""tileiras assembles the representative kernels to sm_90 cubins; the matmul must use the
Hopper tensor-core and TMA paths (HGMMA, UTMALDG), which need the `assume` hints."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sample_kernels as sk

from cutile.backend.bytecode import SUPPORTED_VERSIONS, BytecodeVersion, write_bytecode
from cutile.backend.tileiras import Tileiras, assemble
from cutile.dump import sass as dump_sass

pytestmark = pytest.mark.tileiras


def sass(tool: Tileiras, cubin: bytes, tmp_path: Path) -> str:
    text = dump_sass(cubin, tool)
    if text is None:
        pytest.skip("cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump)")
    return text


@pytest.mark.parametrize("name", sorted(sk.REPRESENTATIVE))
def test_representative_kernel_assembles_for_sm_90(name: str, tool: Tileiras) -> None:
    module = sk.REPRESENTATIVE[name]()
    start = time.perf_counter()
    cubin = assemble(write_bytecode(module), "sm_90", tool=tool)
    elapsed = time.perf_counter() - start
    assert cubin[:4] == b"\x7fELF"
    assert module.functions[0].name.encode() in cubin  # the kernel symbol
    assert elapsed < 60, f"{name} took {elapsed:.1f} s"


def test_matmul_uses_wgmma_and_tma(tool: Tileiras, tmp_path: Path) -> None:
    text = sass(tool, assemble(write_bytecode(sk.matmul_f16()), "sm_90", tool=tool), tmp_path)
    assert "HGMMA" in text
    assert "UTMALDG" in text


def test_vector_add_sass_adds_floats(tool: Tileiras, tmp_path: Path) -> None:
    text = sass(tool, assemble(write_bytecode(sk.vector_add_f32()), "sm_90", tool=tool), tmp_path)
    assert "FADD" in text


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS, ids=str)
def test_every_version_gives_the_same_cubin(version: BytecodeVersion, tool: Tileiras) -> None:
    # The wire format changes between versions, the program does not.
    reference = assemble(write_bytecode(sk.saxpy(), "13.3"), "sm_90", tool=tool)
    assert assemble(write_bytecode(sk.saxpy(), version), "sm_90", tool=tool) == reference


def test_entry_hints_reach_the_assembler(tool: Tileiras) -> None:
    module = sk.vector_add_f32()
    module.functions[0].hints = {"sm_90": {"num_worker_warps_per_cta": 2}, "default": {}}
    plain = assemble(write_bytecode(sk.vector_add_f32()), "sm_90", tool=tool)
    hinted = assemble(write_bytecode(module), "sm_90", tool=tool)
    assert hinted[:4] == b"\x7fELF" and hinted != plain
