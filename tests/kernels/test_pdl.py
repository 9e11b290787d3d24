"""Programmatic dependent launch (`@cutile.entry(pdl=True)`, `lowering/pdl.py`, docs/pdl.md).

Soundness rests on one property of the lowered kernel: its first op is `gdc_wait_tko` and
every memory access is token-ordered after it. These tests check that property with a
dataflow of their own (not the pass's structural check) on every example kernel, check
that the pass's own check catches what breaks it, that the ops encode as the spec says,
that only PDL kernels change (bytecode 13.4 for them, the same 13.3 bytes for every other
kernel), that tileiras turns the ops into the griddepcontrol instructions at the very start
of the SASS, and that a chain of dependent PDL kernels computes what numpy does."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import numpy as np
import pdl_kernels as pk
import pytest
from test_examples import AOT, load

import cutile
from cutile import api
from cutile.backend.bytecode import needed_version, write_bytecode
from cutile.backend.bytecode.opwriter import EncodeError
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import CompileError, ConfigError
from cutile.ir import Builder, Function, Module, Op, Value
from cutile.ir.op_table import MEMORY_OPS
from cutile.ir.types import TokenType
from cutile.lowering.pdl import ordering_problems

rng = np.random.default_rng(7)


@cutile.entry(pdl=True)
def scale_add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) * 0.5 + 1.0)


def examples() -> list[tuple[str, Any, dict[str, Any]]]:
    """(name, kernel, Consts) of every example kernel the ahead-of-time tests build, and
    kernels with pointer loops, prints and loops of token-carrying stores."""
    import test_control_flow as cf
    import test_unsafe_pointers as up

    out = [(f"{ex}.{name}", getattr(load(ex), name), consts)
           for ex, kernels in AOT.items() for name, consts in kernels.items()]
    out += [("strided_gather", up.strided_gather, {"B": 128}),
            ("row_sums", up.row_sums, {"BM": 16, "BN": 32}),
            ("prints", cf.prints, {"B": 16})]
    return out


EXAMPLES = examples()


def lowered_fn(kernel: Any, consts: dict[str, Any], pdl: bool = True) -> Function:
    k = kernel.with_hints(pdl=pdl)
    return k.lowered(k.specialization(consts)).module.functions[0]


# -- the property, by an independent dataflow ---------------------------------------------


def _is_token(v: Value) -> bool:
    return isinstance(v.type, TokenType)


def _terminators(block: Any, names: tuple[str, ...], loops: bool) -> list[Op]:
    """`names` ops of `block` and of the `if`s in it (and of nested loops unless `loops`
    is False: a `continue` in an inner loop belongs to that loop)."""
    out = []
    for op in block.ops:
        if op.name in names:
            out.append(op)
        if op.name == "if" or (loops and op.name in ("for", "loop")):
            for r in op.regions:
                out += _terminators(r, names, loops)
    return out


def unordered_memory_ops(fn: Function) -> list[str]:
    """Memory ops of `fn` not ordered after an entry-leading `gdc_wait_tko`. A token value
    is "free" when some path lets it exist without the wait having returned: a token made
    from nothing, the result of an op whose token operands are all free, a loop value
    whose init or next value is free, a branch result that some branch yields free.
    Computed to a fixpoint; a memory op is ordered iff it takes a token that is not free."""
    ops = list(fn.walk())
    top = fn.body.ops
    # a token-less launch of dependents may come first (`pdl_trigger_first`): it orders
    # nothing, so its token is free like any token made from nothing
    lead = 1 if top and top[0].name == "gdc_launch_dependents_tko" and not top[0].operands \
        else 0
    first = top[lead] if len(top) > lead else None
    root = first if first is not None and first.name == "gdc_wait_tko" \
        and not first.operands else None
    free: set[Value] = set()

    def mark(values: list[Value]) -> bool:
        new = [v for v in values if _is_token(v) and v not in free]
        free.update(new)
        return bool(new)

    changed = True
    while changed:
        changed = False
        for op in ops:
            if op.name in ("for", "loop"):
                body = op.regions[0]
                init = op.operands[3:] if op.name == "for" else op.operands
                carried = body.args[1:] if op.name == "for" else body.args
                nexts = [t.operands for t in _terminators(body, ("continue",), False)]
                ends = [*nexts, init] if op.name == "for" else \
                    [t.operands for t in _terminators(body, ("break",), False)]
                changed |= mark([a for i, a in enumerate(carried)
                                 if any(n[i] in free for n in [init, *nexts])])
                changed |= mark([r for i, r in enumerate(op.results)
                                 if any(e[i] in free for e in ends)])
            elif op.name == "if":
                yields = [t.operands for r in op.regions for t in r.ops if t.name == "yield"]
                changed |= mark([r for i, r in enumerate(op.results)
                                 if any(y[i] in free for y in yields)])
            elif op is not root:
                toks = [v for v in op.operands if _is_token(v)]
                if not toks or all(t in free for t in toks):
                    changed |= mark(op.results)
    problems = []
    for op in ops:
        if op.name in MEMORY_OPS:
            toks = [v for v in op.operands if _is_token(v)]
            if root is None or not toks or all(t in free for t in toks):
                problems.append(f"{op.name} at {op.loc}")
    return problems


@pytest.mark.parametrize(("name", "kernel", "consts"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_every_memory_access_of_a_pdl_kernel_is_ordered_after_the_wait(
        name: str, kernel: Any, consts: dict[str, Any]) -> None:
    fn = lowered_fn(kernel, consts)
    first, second = fn.body.ops[:2]
    assert (first.name, first.operands) == ("gdc_wait_tko", [])
    assert (second.name, second.operands) == ("gdc_launch_dependents_tko", [first.result])
    assert any(op.name in MEMORY_OPS for op in fn.walk()), "a kernel with no memory access"
    assert unordered_memory_ops(fn) == []
    assert ordering_problems(fn) == []


@pytest.mark.parametrize(("name", "kernel", "consts"), EXAMPLES[:3] + EXAMPLES[-3:],
                         ids=[e[0] for e in EXAMPLES[:3] + EXAMPLES[-3:]])
def test_without_pdl_nothing_orders_the_accesses(name: str, kernel: Any,
                                                 consts: dict[str, Any]) -> None:
    """The dataflow above can fail: on the plain kernel every access is unordered."""
    fn = lowered_fn(kernel, consts, pdl=False)
    assert not any(op.name.startswith("gdc_") for op in fn.walk())
    n = sum(op.name in MEMORY_OPS for op in fn.walk())
    assert len(unordered_memory_ops(fn)) == n > 0


def _first(fn: Function, names: set[str]) -> tuple[Any, int]:
    for block in [fn.body, *(r for op in fn.walk() for r in op.regions)]:
        for i, op in enumerate(block.ops):
            if op.name in names:
                return block, i
    raise AssertionError(f"no {names}")


def test_the_prologue_check_refuses_what_would_race() -> None:
    fn = lowered_fn(scale_add, {"B": 128})

    unordered = copy.deepcopy(fn)  # the load loses its token
    block, i = _first(unordered, {"load_view_tko"})
    load = block.ops[i]
    load.operands.pop()
    load.attrs["has_token"] = False
    assert any("is not ordered by a token" in p for p in ordering_problems(unordered))
    assert len(unordered_memory_ops(unordered)) == 1

    rooted = copy.deepcopy(fn)  # the store's token comes from a fresh make_token
    block, i = _first(rooted, {"store_view_tko"})
    b = Builder(Module("m"))
    with b.at(block):
        tok = b.make_token()
    block.ops.insert(i, block.ops.pop())
    block.ops[i + 1].operands[-1] = tok
    assert any("starts a token chain" in p for p in ordering_problems(rooted))
    assert len(unordered_memory_ops(rooted)) == 1

    late = copy.deepcopy(fn)  # the wait after the first load
    wait = late.body.ops.pop(0)
    block, i = _first(late, {"load_view_tko"})
    block.ops.insert(i + 1, wait)
    assert any("does not start with" in p for p in ordering_problems(late))
    assert unordered_memory_ops(late) != []


def test_the_gdc_ops_encode_with_their_opcodes() -> None:
    from cutile.backend.bytecode.debug import DebugTable, FunctionDebugInfo
    from cutile.backend.bytecode.opwriter import ModuleTables, OpWriter
    from cutile.backend.bytecode.tables import ConstantTable, StringTable, TypeTable
    from cutile.backend.bytecode.version import V13_4
    from cutile.ir.types import TOKEN

    b = Builder(Module("m"))
    fn = b.entry("k", [])
    with b.at(fn.body):
        b.gdc_launch_dependents(b.gdc_wait())
        b.return_()
    tables = ModuleTables(V13_4, StringTable(), TypeTable(V13_4), ConstantTable())
    w = OpWriter(tables, FunctionDebugInfo(DebugTable(tables.strings, V13_4), "k", None))
    token = tables.types.id(TOKEN)
    w.write_op(fn.body.ops[0])
    # opcode 120, the result type, flags 0 (no token operand)
    assert bytes(w.out) == bytes([120, token, 0])
    w.out.clear()
    w.write_op(fn.body.ops[1])
    # opcode 119, the result type, flags 1, operand: value 0 (the wait's token)
    assert bytes(w.out) == bytes([119, token, 1, 0])
    with pytest.raises(EncodeError, match=r"needs bytecode 13\.4"):
        write_bytecode(b.module, "13.3")


def test_only_pdl_kernels_change_bytecode_version() -> None:
    for name, kernel, consts in EXAMPLES:
        plain = lowered_fn(kernel, consts, pdl=False)
        m = Module(plain.name, [plain])
        assert needed_version(m) == (needed_version(m)[0], None), name
        assert str(needed_version(m)[0]) == "13.3", name
        assert write_bytecode(m)[8:10] == bytes([13, 3])
        pdl = Module(plain.name, [lowered_fn(kernel, consts)])
        version, why = needed_version(pdl)
        assert (str(version), why) == ("13.4", "gdc_wait_tko"), name
        assert write_bytecode(pdl, version)[8:10] == bytes([13, 4])


def test_cutile_pdl_0_compiles_the_plain_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = scale_add.specialization({"B": 128})
    twin = scale_add.with_hints(pdl=False)
    plain_bytes = write_bytecode(twin.lowered(spec).module)
    assert scale_add.pdl_enabled() and scale_add.identity(spec)["pdl"] is True
    monkeypatch.setenv("CUTILE_PDL", "0")
    assert not scale_add.pdl_enabled()
    off = scale_add.lowered(spec)
    assert not off.pdl and scale_add.identity(spec)["pdl"] is False
    assert write_bytecode(off.module, needed_version(off.module)[0]) == plain_bytes
    monkeypatch.setenv("CUTILE_PDL", "1")
    assert scale_add.lowered(spec).pdl
    monkeypatch.setenv("CUTILE_PDL", "sometimes")
    with pytest.raises(ConfigError) as err:
        scale_add.lowered(spec)
    assert err.value.code == "CT8008"


def test_pdl_is_true_or_false() -> None:
    with pytest.raises(ConfigError) as err:
        cutile.entry(pdl="yes")  # type: ignore[call-overload]
    assert err.value.code == "CT8020"
    assert not cutile.entry(lambda z: None).pdl  # the default: off


# -- what tileiras makes of it ------------------------------------------------------------

_MEMORY_LINE = re.compile(r"= (load|store|atomic)_\w+_tko|^\s*(load|store|atomic)_\w+_tko")


@pytest.mark.tileiras
def test_the_wait_comes_before_the_first_access_in_the_disassembly() -> None:
    from cutile.backend.tileiras import find_tileiras

    if not find_tileiras().disassembler.exists():
        pytest.skip("tileirdisasm is not installed next to tileiras")
    text = scale_add.compile(B=128).ir_text().splitlines()
    wait = next(i for i, ln in enumerate(text) if "gdc_wait_tko" in ln)
    accesses = [i for i, ln in enumerate(text) if _MEMORY_LINE.search(ln)]
    assert accesses and wait < min(accesses)
    assert all("token = %0 " in text[i] for i in accesses), "ordered by the wait's token"
    assert "gdc_" not in scale_add.with_hints(pdl=False).compile(B=128).ir_text()


# SASS of global memory accesses (loads, stores, TMA, atomics and reductions, async copies)
_GLOBAL = re.compile(r"\b(LDG|STG|UTMALDG|UTMASTG|UBLKCP|ATOMG|ATOM|RED|LDGSTS|UTMAPF)\b")
SASS_KERNELS = ["add.add", "persistent_gemm.persistent_gemm", "histogram.histogram",
                "attention.attention", "row_sums"]


@pytest.mark.tileiras
@pytest.mark.parametrize("name", SASS_KERNELS)
def test_sass_starts_with_griddepcontrol_wait(name: str) -> None:
    """griddepcontrol.wait is ACQBULK in Hopper SASS and launch_dependents is PREEXIT
    (read from tileiras 13.5's output); the wait comes before any global memory access."""
    from cutile.dump import sass

    _, kernel, consts = next(e for e in EXAMPLES if e[0] == name)
    text = sass(kernel.with_hints(pdl=True).compile(target="sm_90", **consts).cubin)
    if text is None:
        pytest.skip("cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    lines = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
    wait = next(i for i, ln in enumerate(lines) if re.search(r"\bACQBULK\b", ln))
    first_access = next(i for i, ln in enumerate(lines) if _GLOBAL.search(ln))
    assert wait < first_access, lines[first_access]
    assert any(re.search(r"\bPREEXIT\b", ln) for ln in lines)
    plain = sass(kernel.with_hints(pdl=False).compile(target="sm_90", **consts).cubin) or ""
    assert "ACQBULK" not in plain and "PREEXIT" not in plain


_OLD_TILEIRAS = r"""#!/bin/sh
case "$1" in
  --version) echo "Cuda compilation tools, release 13.3, V13.3.9"; exit 0 ;;
  --list-versions) printf '13.1\n13.2\n13.3\n'; exit 0 ;;
esac
out=""; src=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift 2 ;; --gpu-name) shift 2 ;; -O*) shift ;;
    *) src="$1"; shift ;; esac
done
printf 'FAKECUBIN\n' > "$out" && cat "$src" >> "$out"
"""


def test_an_assembler_without_13_4_refuses_a_pdl_kernel(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    tool = tmp_path / "tileiras"
    tool.write_text(_OLD_TILEIRAS)
    tool.chmod(0o755)
    monkeypatch.setenv("CUTILE_TILEIRAS", str(tool))
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(CompileError) as err:
        scale_add.compile(B=128)
    e = err.value
    assert e.code == "CT7007"
    assert "`scale_add` (its `gdc_wait_tko`) needs Tile IR bytecode 13.4" in str(e)
    assert "reads versions up to 13.3" in str(e)
    assert e.hint is not None and "pdl=False" in e.hint and "CUTILE_PDL=0" in e.hint
    # a kernel without PDL is written as 13.3 and assembled by the same tool
    assert scale_add.with_hints(pdl=False).compile(B=128).cubin.startswith(b"FAKECUBIN")


# -- what it computes ---------------------------------------------------------------------


def test_a_pdl_kernel_computes_what_its_plain_twin_does() -> None:
    x = rng.standard_normal(1024).astype(np.float32)
    (z, _) = scale_add(api.zeros([1024], f32).partition([128]), api.from_numpy(x)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), x * np.float32(0.5) + 1)


@pytest.mark.parametrize("plain_every", [0, 4])
def test_a_chain_of_dependent_pdl_kernels_matches_numpy(plain_every: int) -> None:
    """Each step reads the next tile of what the step before wrote; `plain_every` mixes
    steps without PDL into the chain. Exact: the reference does the same f32 arithmetic."""
    a0 = rng.random(pk.B * 8, dtype=np.float32)
    y0 = rng.random(pk.B * 8, dtype=np.float32)
    steps = 9
    got = pk.run_chain(a0, y0, steps, plain_every)
    want = pk.reference(a0, y0, steps)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_graph_of_pdl_kernels_matches_numpy() -> None:
    a0 = rng.random(pk.B * 4, dtype=np.float32)
    y0 = rng.random(pk.B * 4, dtype=np.float32)
    a, b, y = api.from_numpy(a0), api.zeros([a0.size], f32), api.from_numpy(y0)
    g = cutile.graph(pk.chain_in_graph, a, b, y, 6, 4)
    g.replay()
    g.replay().wait()
    want = pk.reference(a0, y0, 12)
    np.testing.assert_array_equal(g.read(0), want[0])
    np.testing.assert_array_equal(g.read(1), want[1])
    g.into_inner()


def test_the_python_launch_path_builds_the_pdl_launch_config() -> None:
    """`LoadedKernel.launch` (autotuning, benchmarks' raw replays) launches a PDL kernel
    with `cuLaunchKernelEx` and this config; building it needs no GPU."""
    d = pytest.importorskip("cuda.bindings.driver")
    from cutile.runtime.launch import _pdl_config

    cfg = _pdl_config(d)
    assert cfg.numAttrs == 1 and len(cfg.attrs) == 1
    attr = cfg.attrs[0]
    assert attr.id == d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    assert attr.value.programmaticStreamSerializationAllowed == 1
    assert (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ, cfg.sharedMemBytes) == (1, 1, 1, 0)
