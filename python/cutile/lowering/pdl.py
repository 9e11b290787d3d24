"""Programmatic dependent launch (PDL): the prologue of a kernel compiled with
`@cutile.entry(pdl=True)`, and the check that it orders every memory access after the wait.

A PDL kernel is launched with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`
(`rust/cutile-py/src/runtime/driver.rs`): its blocks may become resident, and run, while
the kernel before it on the stream is still running. What keeps stream order intact is
this prologue (docs/pdl.md has the whole argument):

1. `gdc_wait_tko` (PTX `griddepcontrol.wait`) is the entry's first op. It returns once
   the prerequisite grid has completed and its memory operations are performed and
   visible to this grid.
2. Every memory access of the kernel is ordered after it. In Tile IR only tokens order
   memory operations (program order does not), so the wait's token becomes the root of
   every token chain: each `make_token` is replaced by it, and every load, store, atomic
   or print that had no token takes it. Then every token descends from the wait, and
   `ordering_problems` checks exactly that on the finished function.
3. `gdc_launch_dependents_tko` comes right after the wait, taking its token: the next
   PDL kernel may be scheduled once every block of this one has passed its wait, that is
   once the previous kernel completed. Signalling before the wait would also be sound
   (the signal orders no memory, and the next kernel waits for this one's completion
   anyway), but would let a chain of PDL kernels cascade: kernel N+2 resident, spinning
   on SMs, while kernel N still runs. After the wait, at most two grids of a chain are on
   the GPU, and the next one's launch latency still hides behind this one's work.

Since every PDL kernel waits for full completion of its predecessor before it touches
memory, and that predecessor waited for its own before touching memory, the writes of
every earlier op are visible to this kernel, exactly as without PDL.
"""

from __future__ import annotations

from ..errors import InternalCompilerError
from ..ir import Block, Builder, Function, Op, Value
from ..ir.op_table import IMPURE, MEMORY_OPS, NO_MEMORY_IMPURE
from ..ir.types import TokenType

# Ops with an optional token operand (the last one, marked by `has_token`) that a PDL
# kernel orders after the wait: the memory ops, and prints (whose tokens must not start a
# chain of their own either: every token descends from the wait).
_TOKEN_TAKERS = MEMORY_OPS | {"print_tko"}
# Ops whose token results are what their regions yield, not new orderings.
_CONTROL = frozenset({"for", "if", "loop"})


def add_prologue(b: Builder, fn: Function) -> None:
    """Make `fn` (a lowered entry) a PDL kernel: the wait and the launch of dependents as
    its first ops, and every memory access ordered after the wait (see the module)."""
    prologue = Block()
    with b.at(prologue), b.location(fn.loc):
        wait = b.gdc_wait()
        b.gdc_launch_dependents(wait)
    replaced: dict[Value, Value] = {}
    _drop_token_roots(fn.body, wait, replaced)
    _root_tokens(fn.body, wait, replaced)
    fn.body.ops[:0] = prologue.ops
    problems = ordering_problems(fn)
    if problems:  # a bug of this pass or of an op it does not know: never launch it
        raise InternalCompilerError(
            f"`{fn.name}`: the PDL prologue does not order every memory access: "
            + "; ".join(problems))


def _drop_token_roots(block: Block, wait: Value, replaced: dict[Value, Value]) -> None:
    """Remove every `make_token`, remembering that its token is now the wait's."""
    kept: list[Op] = []
    for op in block.ops:
        if op.name == "make_token":
            replaced[op.result] = wait
            continue
        for region in op.regions:
            _drop_token_roots(region, wait, replaced)
        kept.append(op)
    block.ops[:] = kept


def _root_tokens(block: Block, wait: Value, replaced: dict[Value, Value]) -> None:
    """Uses of removed tokens read the wait's; token takers without a token take it."""
    for op in block.walk():
        op.operands[:] = [replaced.get(v, v) for v in op.operands]
        if op.name in _TOKEN_TAKERS and not op.attrs.get("has_token", False):
            op.operands.append(wait)
            op.attrs["has_token"] = True


def ordering_problems(fn: Function) -> list[str]:
    """Why `fn` may touch memory before its prerequisite grid completed (empty: it
    cannot). The structure that proves it: the entry starts with a token-less
    `gdc_wait_tko` and then `gdc_launch_dependents_tko` of its token; no other op makes a
    token out of nothing (no `make_token`, and every op with a token result other than
    control flow takes a token), so every token descends from the wait; and every memory
    op takes a token."""
    problems: list[str] = []
    ops = fn.body.ops
    if len(ops) < 2 or ops[0].name != "gdc_wait_tko" or ops[0].operands:
        problems.append("the entry does not start with a token-less `gdc_wait_tko`")
        return problems
    wait = ops[0].result
    if ops[1].name != "gdc_launch_dependents_tko" or ops[1].operands != [wait]:
        problems.append("`gdc_launch_dependents_tko` of the wait's token does not follow it")
    seen_wait = 0
    for op in fn.walk():
        where = f"`{op.name}`" + (f" at {op.loc}" if op.loc else "")
        if op.name in IMPURE and op.name not in MEMORY_OPS | NO_MEMORY_IMPURE:
            problems.append(f"{where} is not known to touch memory or not")
        if op.name == "gdc_wait_tko":
            seen_wait += 1
        if op.name == "make_token":
            problems.append(f"{where} starts a token chain that is not the wait's")
        takes_token = any(isinstance(v.type, TokenType) for v in op.operands)
        if op.name in MEMORY_OPS and not (op.attrs.get("has_token") and takes_token):
            problems.append(f"{where} is not ordered by a token")
        makes_token = any(isinstance(r.type, TokenType) for r in op.results)
        if makes_token and not takes_token and op.name not in _CONTROL and op is not ops[0]:
            problems.append(f"{where} makes a token that does not descend from the wait")
    if seen_wait != 1:
        problems.append(f"{seen_wait} `gdc_wait_tko` ops (one, first in the entry)")
    return problems
