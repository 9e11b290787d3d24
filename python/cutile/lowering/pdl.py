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
   `pdl_trigger_first=True` asks for exactly that cascade, one grid deep, on a short
   kernel: the launch of dependents is then the entry's first op (token-less), so the
   next kernel's loads ahead of its wait also overlap this kernel's predecessor.

Since every PDL kernel waits for full completion of its predecessor before it touches
memory, and that predecessor waited for its own before touching memory, the writes of
every earlier op are visible to this kernel, exactly as without PDL.

**Loads before the wait** (`pdl_early=("w", ...)`: read-only tensor parameters the kernel
names). A load of such a parameter that comes, in program order, before any other memory
access of the entry stays ahead of the wait: its bytes stream in while the previous kernel
finishes (a decode GEMV's first weight tiles). The wait moves down to just before the
first top-level op that is not pure, not such a load and not a device check (control flow
counts as an access):
those early loads take no token, and no later op uses theirs. They may run before the
previous kernel completed, so that kernel must not write those bytes: the launcher gives
a kernel with early loads the PDL attribute only when no work in flight may write any of
them (the ledger's answer, under the same lock as the launch), and launches it plainly,
in full stream order, otherwise (docs/pdl.md). `LoweredKernel.pdl_early` names the
parameters that have such loads; the launcher reads it from the compiled kernel.
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


def add_prologue(b: Builder, fn: Function, early: dict[Value, str] | None = None,
                 trigger_first: bool = False) -> tuple[str, ...]:
    """Make `fn` (a lowered entry) a PDL kernel: the wait and the launch of dependents
    before its first memory access, and every memory access but the early loads ordered
    after the wait (see the module). `early`: the tensor views of the parameters named in
    `pdl_early`, by view. `trigger_first`: the launch of dependents is the first op (no
    token), not the wait's successor. Returns the names of those with a load ahead of the
    wait."""
    early = early or {}
    prologue, first = Block(), Block()
    with b.at(prologue), b.location(fn.loc):
        wait = b.gdc_wait()
        if not trigger_first:
            b.gdc_launch_dependents(wait)
    if trigger_first:
        with b.at(first), b.location(fn.loc):
            b.gdc_launch_dependents()
    views = _views(fn)
    at = _wait_position(fn, early, views)
    ahead = fn.body.ops[:at]
    replaced: dict[Value, Value] = {}
    _drop_token_roots(fn.body, wait, replaced)
    ahead = [op for op in ahead if op.name != "make_token"]
    after = Block(ops=fn.body.ops[len(ahead):])
    _root_tokens(after, wait, replaced)
    fn.body.ops[:] = first.ops + ahead + prologue.ops + after.ops
    problems = ordering_problems(fn, early)
    if problems:  # a bug of this pass or of an op it does not know: never launch it
        raise InternalCompilerError(
            f"`{fn.name}`: the PDL prologue does not order every memory access: "
            + "; ".join(problems))
    return tuple(sorted({early[_root_view(op.operands[0], views)] for op in ahead
                         if op.name == "load_view_tko"}))


def _views(fn: Function) -> dict[Value, Op]:
    """Each partition view's defining op (to trace a load to its tensor view)."""
    return {op.result: op for op in fn.walk() if op.name == "make_partition_view"}


def _root_view(v: Value, views: dict[Value, Op]) -> Value:
    while v in views:
        v = views[v].operands[0]
    return v


def _early_load(op: Op, early: dict[Value, str], views: dict[Value, Op]) -> bool:
    """A token-less load of a parameter named in `pdl_early` (through its views)."""
    return (op.name == "load_view_tko" and not op.attrs.get("has_token", False)
            and _root_view(op.operands[0], views) in early)


def _may_precede_the_wait(op: Op, early: dict[Value, str], views: dict[Value, Op]) -> bool:
    """Pure ops without regions, early loads, device checks (`assert`: they read no
    memory) and `make_token` (which the pass drops)."""
    if op.regions:
        return False
    if op.name in ("make_token", "assert") or _early_load(op, early, views):
        return True
    return op.name not in IMPURE


def _wait_position(fn: Function, early: dict[Value, str], views: dict[Value, Op]) -> int:
    """Where the wait goes: before the first top-level op that may not precede it, when
    an early load comes before that op; else first."""
    if not early:
        return 0
    ops = fn.body.ops
    at = next((i for i, op in enumerate(ops) if not _may_precede_the_wait(op, early, views)),
              len(ops))
    # no early load ahead of that op: the wait stays first, as in any PDL kernel
    return at if any(_early_load(op, early, views) for op in ops[:at]) else 0


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


def ordering_problems(fn: Function, early: dict[Value, str] | None = None) -> list[str]:
    """Why `fn` may touch memory before its prerequisite grid completed, other than
    through loads of its early parameters (empty: it cannot). The structure that proves
    it: the entry's top level is, optionally, a token-less `gdc_launch_dependents_tko`
    whose token nothing uses (`pdl_trigger_first`), then some ops ahead of the wait that
    touch no memory but by token-less loads of an early parameter (`early`: their tensor
    views; pure ops, device checks and those loads), then a token-less `gdc_wait_tko` and,
    unless the launch of dependents came first, `gdc_launch_dependents_tko` of its token;
    no op after it uses a token made ahead of it, and no other op makes a token out of
    nothing (no `make_token`, and every op with a token result other than control flow
    takes a token), so every token used after the wait descends from it; and every memory
    op after it takes a token."""
    early = early or {}
    problems: list[str] = []
    ops = fn.body.ops
    at = next((i for i, op in enumerate(ops) if op.name == "gdc_wait_tko"), None)
    if at is None or ops[at].operands:
        problems.append("the entry does not start with a token-less `gdc_wait_tko`")
        return problems
    views = _views(fn)
    ahead_tokens: set[Value] = set()
    trigger = ops[0] if (ops[0].name == "gdc_launch_dependents_tko"
                         and not ops[0].operands) else None
    for op in ops[:at]:
        if op is trigger:           # signals the next grid; orders no memory
            ahead_tokens.update(trigger.results)
            continue
        if not _may_precede_the_wait(op, early, views) or op.name == "make_token":
            where = f"`{op.name}`" + (f" at {op.loc}" if op.loc else "")
            problems.append(f"the entry does not start with a token-less `gdc_wait_tko`: "
                            f"{where} comes before it")
            return problems
        ahead_tokens.update(r for r in op.results if isinstance(r.type, TokenType))
    wait = ops[at].result
    if trigger is None and (at + 1 >= len(ops) or ops[at + 1].name != "gdc_launch_dependents_tko"
                            or ops[at + 1].operands != [wait]):
        problems.append("`gdc_launch_dependents_tko` of the wait's token does not follow it")
    seen_wait = 0
    ahead = {id(op) for op in ops[:at]}
    for op in fn.walk():
        where = f"`{op.name}`" + (f" at {op.loc}" if op.loc else "")
        if op.name in IMPURE and op.name not in MEMORY_OPS | NO_MEMORY_IMPURE:
            problems.append(f"{where} is not known to touch memory or not")
        if op.name == "gdc_wait_tko":
            seen_wait += 1
        if op.name == "make_token":
            problems.append(f"{where} starts a token chain that is not the wait's")
        if any(v in ahead_tokens for v in op.operands):
            problems.append(f"{where} takes the token of a load ahead of the wait")
        if id(op) in ahead:
            continue          # an early load or the first trigger (checked above): no token
        takes_token = any(isinstance(v.type, TokenType) for v in op.operands)
        if op.name in MEMORY_OPS and not (op.attrs.get("has_token") and takes_token):
            problems.append(f"{where} is not ordered by a token")
        makes_token = any(isinstance(r.type, TokenType) for r in op.results)
        if makes_token and not takes_token and op.name not in _CONTROL and op is not ops[at]:
            problems.append(f"{where} makes a token that does not descend from the wait")
    if seen_wait != 1:
        problems.append(f"{seen_wait} `gdc_wait_tko` ops (one, first in the entry)")
    return problems
