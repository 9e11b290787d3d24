"""A kernel that inlines a `@cutile.device` function assembles: every op's debug location
has the kernel's subprogram as scope (tileiras refuses an op scoped to another subprogram:
"Operation debug info scope does not match function debug info scope"), while the location
itself keeps the device function's own line."""

from __future__ import annotations

import pytest

import cutile
from cutile.core import Mut, Tensor, exp, f32, load_tile_like


@cutile.device
def soften(t):
    return exp(t) * 0.5 + 1.0


@cutile.entry
def uses_a_device_function(z: Mut[Tensor[f32, [64]]], x: Tensor[f32, [-1]]):
    z.store(soften(load_tile_like(x, z)))


@pytest.mark.tileiras
def test_a_kernel_with_an_inlined_device_function_assembles() -> None:
    cubin = uses_a_device_function.compile(target="sm_90").cubin
    assert cubin[:4] == b"\x7fELF"


def test_inlined_ops_keep_their_own_line_under_the_kernels_scope() -> None:
    from cutile.backend.bytecode.debug import DebugTable, FunctionDebugInfo
    from cutile.backend.bytecode.tables import StringTable
    from cutile.backend.bytecode.version import SUPPORTED_VERSIONS
    from cutile.ir import Location

    table = DebugTable(StringTable(), SUPPORTED_VERSIONS[-1])
    info = FunctionDebugInfo(table, "k", Location("/src/k.py", 10, 0, "k"))
    own = info.loc_id(Location("/src/k.py", 12, 4, "k"))
    inlined = info.loc_id(Location("/src/helpers.py", 3, 4, "helper"))
    assert own != inlined                     # different places
    assert len(info._scopes) == 1             # one subprogram: the kernel's
