"""Control flow: `if`, `for`, `while`, `break`, `continue` and early `return`, lowered to
Tile IR's structured `if`, `for` and `loop`.

The lowering is one pass in SSA form: each name holds a lowering value (`values.py`), and
where paths meet (after an `if`, at a loop head, at a loop's exits) the names whose values
differ become results of the structured op. The rules:

- A branch that ends in `break` or `continue` ends in that Tile IR op (which leaves the
  innermost loop from inside any `if`s); the code after the `if` continues on the other
  branch alone, so its ops follow the `if` in the enclosing block.
- A `for` over a range without `break` is Tile IR's `for` (`continue` included). A `for`
  with a `break` (or a `return` inside) and every `while` are a `loop`: the loop test is the
  first thing in the body and leaves with `break`. In both forms a range's counter runs in
  64 bits unless the step is 1 or a constant stop and step keep it below 2^31, so
  `iv + step` never wraps past the bound (the checker assumes the counter stays in
  `[start, stop)`; the H200 wraps a 32-bit `for` counter and goes on).
- A name assigned in a loop body and defined before the loop is carried (an argument of the
  body, a result of the op); a name first assigned inside is not visible after the loop,
  and neither is the loop variable of a `for`.
- `return` in a device function (inlined) or a bare `return` in an entry sets two hidden
  names: `$returned` (a flag) and `$retval`. Inside a loop it breaks out; after a statement
  that may have returned, the rest of the block runs under `if not $returned` (or, inside a
  loop, the loop breaks when it is set).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from .. import dtypes as dt
from ..frontend import kast as K
from ..ir import Block, TileType, Value, scalar
from .values import ConstV, LVal, MappedRangeV, RangeV, TileV, TupleV

if TYPE_CHECKING:
    from .lower import Lowerer

RETURNED = "$returned"
RETVAL = "$retval"

# The shape of a value carried through control flow: a tile type, a tuple of templates, or
# None for the constant None (which carries nothing); where two paths meet, a constant
# both give (`same_constant`: it carries nothing either, and stays that constant).
Template: TypeAlias = TileType | tuple["Template", ...] | ConstV | None


def same_constant(a: LVal, b: LVal) -> LVal | None:
    """The compile-time value two paths both give (a tuple's items each), or None. The
    checker reads a value that is one number on every path as that number, folded exactly
    (`width.rs`); merged into a device integer, it would wrap where the proof did not
    (`(r * 2**30) // 2**30`). `True` and `1` are the number 1 (as the checker reads them)."""
    if isinstance(a, ConstV) and isinstance(b, ConstV):
        x, y = a.value, b.value
        if type(x) is type(y) and x == y:
            return a
        if {type(x), type(y)} == {bool, int} and x == y:
            return ConstV(int(bool(x)))
        return None
    if isinstance(a, TupleV) and isinstance(b, TupleV) and len(a.items) == len(b.items):
        items = [same_constant(x, y) for x, y in zip(a.items, b.items, strict=True)]
        if all(i is not None for i in items):
            return TupleV(tuple(i for i in items if i is not None))
    return None


def compile_time(v: LVal) -> bool:
    """A value with no device value in it (a constant, or a tuple of them)."""
    if isinstance(v, TupleV):
        return all(compile_time(x) for x in v.items)
    return isinstance(v, ConstV)


@dataclass
class State:
    env: dict[str, LVal]
    tokens: dict[str, Value]


@dataclass
class LoopCtx:
    """A loop being lowered: what its exits (`continue`, `break`, the end of the body)
    pass on. In a scratch pass the templates widen to the types the body produces."""

    kind: str  # "for" (Tile IR `for`: continue only) | "loop"
    carried: list[str]
    templates: list[Template]
    token_keys: list[str]
    span: K.Span
    scratch: bool
    # A counting `loop`: the counter and its step (`continue` passes `iv + step`).
    iv: Value | None = None
    step: Value | None = None
    changed: bool = False
    # Scratch passes: `$retval` met at an exit while not carried (it must be, with this
    # template, defined before the loop).
    ret_template: list[Template] = field(default_factory=list)


@dataclass
class Frame:
    function: K.Function
    env: dict[str, LVal] = field(default_factory=dict)
    loops: list[LoopCtx] = field(default_factory=list)


def shown(name: str) -> str:
    return "the return value" if name == RETVAL else f"`{name}`"


@dataclass
class LoopPlan:
    """What the scratch passes settled for one loop entered in one state (`plan_key`): the
    template of `$retval` defined before it (None: not defined there) and the templates
    of the carried names."""

    ret: Template | None
    templates: list[Template]


class ControlFlow:
    def __init__(self, low: Lowerer) -> None:
        self.low = low
        self.b = low.b
        self.arith = low.arith
        # Settled loops (`run_loop`), by `plan_key`; and the scratch passes being run (the
        # ops made meanwhile are thrown away).
        self.plans: dict[tuple[object, ...], LoopPlan] = {}
        self.scratch_depth = 0
        # Objects named by identity in a plan key, kept alive so that no id is reused.
        self._pinned: list[object] = []
        self._reads: dict[int, frozenset[str]] = {}

    @property
    def frame(self) -> Frame:
        assert self.low.frame is not None
        return self.low.frame

    @property
    def env(self) -> dict[str, LVal]:
        return self.frame.env

    def err(self, code: str, msg: str, span: K.Span, label: str = "",
            help: str | None = None) -> Exception:
        return self.low.error(code, msg, span, label, help=help)

    def snapshot(self) -> State:
        return State(dict(self.env), dict(self.low.tokens))

    def restore(self, st: State) -> None:
        self.frame.env = dict(st.env)
        self.low.tokens = dict(st.tokens)

    # ------------------------------------------------------------------ templates

    def natural_type(self, v: ConstV, name: str, span: K.Span) -> TileType:
        if isinstance(v.value, bool):
            return scalar(dt.bool_)
        if isinstance(v.value, int):
            return scalar(dt.i32)
        if isinstance(v.value, float):
            return scalar(dt.f32)
        raise self.err("CT3015", f"{shown(name)} cannot change inside a loop or branch", span,
                       "not a number or tile")

    def template_of(self, v: LVal, name: str, span: K.Span) -> Template:
        if isinstance(v, TileV):
            return v.type
        if isinstance(v, ConstV):
            return None if v.value is None else self.natural_type(v, name, span)
        if isinstance(v, TupleV):
            return tuple(self.template_of(x, name, span) for x in v.items)
        raise self.err("CT3015", f"{shown(name)} cannot be carried through control flow",
                       span, "unsupported value",
                       help="only tiles, numbers and tuples of them can differ between paths")

    def join_templates(self, a: LVal, b: LVal, name: str, span: K.Span) -> Template:
        """The template both values convert to (where one path meets another)."""
        if isinstance(a, TupleV) and isinstance(b, TupleV) and len(a.items) == len(b.items):
            return tuple(self.join_templates(x, y, name, span)
                         for x, y in zip(a.items, b.items, strict=True))
        kept = same_constant(a, b)
        if isinstance(kept, ConstV):
            return kept
        if isinstance(a, ConstV) and isinstance(b, ConstV):
            if a.value is None and b.value is None:
                return None
            if a.value is not None and b.value is not None:
                kinds = {type(a.value), type(b.value)}
                if kinds <= {bool}:
                    return scalar(dt.bool_)
                if float in kinds:
                    return scalar(dt.f32)
                if kinds <= {int, bool}:
                    return scalar(dt.i32)
        if isinstance(a, TileV):
            return a.type
        if isinstance(b, TileV):
            return b.type
        if isinstance(a, (ConstV, TupleV)) and isinstance(b, (ConstV, TupleV)):
            raise self.err("CT3015", f"{shown(name)} has different kinds of value on different "
                           "paths", span, "values differ",
                           help="give the variable one type on every path")
        return self.template_of(a, name, span)

    def widen(self, t: Template, v: LVal) -> Template:
        """Scratch passes: a carried tile settles on the type the loop body gives it."""
        if isinstance(v, TileV) and isinstance(t, TileType):
            return v.type
        if isinstance(v, TupleV) and isinstance(t, tuple) and len(t) == len(v.items):
            return tuple(self.widen(x, y) for x, y in zip(t, v.items, strict=True))
        return t

    def as_type(self, v: LVal, target: TileType, name: str, span: K.Span) -> Value:
        if isinstance(v, TileV):
            if v.type != target:
                raise self.err(
                    "CT3015", f"{shown(name)} is a {v.type} on one path and a {target} on "
                    "another", span, "types differ",
                    help="give the variable one type on every path (use `.astype` or `full`)",
                )
            return v.v
        if isinstance(v, ConstV) and isinstance(v.value, (int, float, bool)):
            return self.arith.const_tile(v.value, target.dtype, target.shape).v
        raise self.err("CT3015", f"{shown(name)} cannot be carried through control flow", span,
                       "unsupported value")

    def flatten(self, v: LVal, t: Template, name: str, span: K.Span) -> list[Value]:
        if isinstance(t, ConstV):
            if same_constant(v, t) is not None:
                return []
        elif t is None:
            if isinstance(v, ConstV) and v.value is None:
                return []
        elif isinstance(t, tuple):
            if isinstance(v, TupleV) and len(v.items) == len(t):
                return [x for item, tt in zip(v.items, t, strict=True)
                        for x in self.flatten(item, tt, name, span)]
        elif not isinstance(v, TupleV) and not (isinstance(v, ConstV) and v.value is None):
            return [self.as_type(v, t, name, span)]
        raise self.err("CT3015", f"{shown(name)} has different kinds of value on different "
                       "paths", span, "values differ",
                       help="give the variable one type on every path")

    @staticmethod
    def rebuild(t: Template, vals: Iterator[Value]) -> LVal:
        if isinstance(t, ConstV):
            return t
        if t is None:
            return ConstV(None)
        if isinstance(t, tuple):
            return TupleV(tuple(ControlFlow.rebuild(x, vals) for x in t))
        return TileV(next(vals))

    @staticmethod
    def flat_types(t: Template) -> list[TileType]:
        if t is None or isinstance(t, ConstV):
            return []
        if isinstance(t, tuple):
            return [x for tt in t for x in ControlFlow.flat_types(tt)]
        return [t]

    def placeholder(self, t: Template) -> LVal:
        """A value of template `t` that is never read (a `$retval` on a path that did not
        return)."""
        if isinstance(t, ConstV):
            return t
        if t is None:
            return ConstV(None)
        if isinstance(t, tuple):
            return TupleV(tuple(self.placeholder(x) for x in t))
        return TileV(self.arith.const_tile(False if t.dtype.is_bool else 0, t.dtype,
                                           t.shape).v)

    # ------------------------------------------------------------------ if

    def lower_if(self, s: K.If) -> None:
        taken, cond = self.low.condition(s.nid, s.test, s.span, "`if` test")
        if taken is not None:  # folded as the checker did (`Lowerer.fold`)
            self.low.lower_block(s.body if taken else s.orelse)
            return
        assert cond is not None
        self.branch(cond.v, lambda: self.low.lower_block(s.body),
                    lambda: self.low.lower_block(s.orelse), s.span)

    def branch(self, cond: Value, then_fn: Callable[[], None], else_fn: Callable[[], None],
               span: K.Span) -> None:
        """`if cond` with two arms lowered by the callables. An arm that ends in `break` or
        `continue` is the `if`'s only region; the other arm's ops follow the `if`."""
        before = self.snapshot()
        arms: list[tuple[Block, State, bool]] = []
        for fn in (then_fn, else_fn):
            self.restore(before)
            block = Block()
            self.low.exited = False
            with self.b.at(block):
                fn()
            arms.append((block, self.snapshot(), self.low.exited))
        (then_block, then_st, then_exit), (else_block, else_st, else_exit) = arms
        self.low.exited = False
        if then_exit or else_exit:
            if then_exit:
                exiting, rest, rest_st, c = then_block, else_block, else_st, cond
            else:
                exiting, rest, rest_st = else_block, then_block, then_st
                c = self.b.binary("xori", cond, self.b.scalar_const(True, dt.bool_))
            self.b.op("if", [c], [], {}, [exiting])
            assert self.b.block is not None
            self.b.block.ops.extend(rest.ops)
            self.restore(rest_st)
            self.low.exited = then_exit and else_exit
            return
        self._merge(cond, then_block, then_st, else_block, else_st, span)

    def _merge(self, cond: Value, then_block: Block, then_st: State, else_block: Block,
               else_st: State, span: K.Span) -> None:
        te, ee = then_st.env, else_st.env
        # `$retval` set on one path only: the other path did not return and never reads it
        # (a constant is taken as it is: no merge makes it a device value).
        for have, lack, block in ((te, ee, else_block), (ee, te, then_block)):
            if RETVAL in have and RETVAL not in lack:
                if compile_time(have[RETVAL]):
                    lack[RETVAL] = have[RETVAL]
                    continue
                with self.b.at(block):
                    lack[RETVAL] = self.placeholder(self.template_of(have[RETVAL], RETVAL, span))
        yields: tuple[list[Value], list[Value]] = ([], [])
        merged: list[tuple[str, Template]] = []
        for n in te:
            if n not in ee or te[n] is ee[n]:
                continue
            tv, ev = te[n], ee[n]
            t = self.join_templates(tv, ev, n, span)
            with self.b.at(then_block):
                yields[0].extend(self.flatten(tv, t, n, span))
            with self.b.at(else_block):
                yields[1].extend(self.flatten(ev, t, n, span))
            merged.append((n, t))
        tok_keys = [k for k in then_st.tokens
                    if k in else_st.tokens and then_st.tokens[k] is not else_st.tokens[k]]
        yields[0].extend(then_st.tokens[k] for k in tok_keys)
        yields[1].extend(else_st.tokens[k] for k in tok_keys)
        with self.b.at(then_block):
            self.b.op("yield", yields[0], [])
        with self.b.at(else_block):
            self.b.op("yield", yields[1], [])
        op = self.b.op("if", [cond], [v.type for v in yields[0]], {}, [then_block, else_block])
        results = iter(op.results)
        env = {n: v for n, v in te.items() if n in ee}
        for n, t in merged:
            env[n] = self.rebuild(t, results)
        tokens = {k: v for k, v in then_st.tokens.items() if k in else_st.tokens}
        for k in tok_keys:
            tokens[k] = next(results)
        self.frame.env = env
        self.low.tokens = tokens

    # ------------------------------------------------------------------ return

    def lower_return(self, s: K.Return) -> None:
        if self.frame.function.kind == "entry" and s.value is not None:
            raise self.err("CT3012", "a kernel entry cannot return a value", s.span,
                           "returned here", help="store results with `z.store(...)`")
        value = self.low.expr(s.value) if s.value is not None else ConstV(None)
        self.env[RETVAL] = value
        self.env[RETURNED] = ConstV(True)
        if self.frame.loops:
            self.exit_loop("break", s.span)

    def may_have_returned(self) -> TileV | None:
        """`$returned` where it is neither known false nor known true."""
        flag = self.env.get(RETURNED)
        return flag if isinstance(flag, TileV) else None

    def after_return(self, flag: TileV, rest: list[K.Stmt], span: K.Span) -> bool:
        """After a statement that may have returned: inside a loop of this function, leave
        it if so; elsewhere run `rest` only if not. True when `rest` was lowered here."""
        if not self.frame.loops and not rest:
            return True

        def returned() -> None:
            self.env[RETURNED] = ConstV(True)
            if self.frame.loops:
                self.exit_loop("break", span)

        def not_returned() -> None:
            self.env[RETURNED] = ConstV(False)
            if not self.frame.loops:
                self.low.lower_block(rest)

        self.branch(flag.v, returned, not_returned, span)
        return not self.frame.loops

    def function_result(self, span: K.Span) -> LVal:
        """The value a device function returns, once its body is lowered."""
        flag = self.env.get(RETURNED)
        value = self.env.get(RETVAL, ConstV(None))
        if flag is None or (isinstance(flag, ConstV) and not flag.value):
            return ConstV(None)
        if isinstance(flag, ConstV) or (isinstance(value, ConstV) and value.value is None):
            return value
        raise self.err("CT3015", f"`{self.frame.function.name}` returns a value on some paths "
                       "and nothing on others", span, "may fall off the end",
                       help="end every path of the function with `return`")

    # ------------------------------------------------------------------ loops

    def exit_loop(self, kind: str, span: K.Span) -> None:
        """`continue` or `break` of the innermost loop of this function, with the carried
        values as they are now."""
        ctx = self.frame.loops[-1]
        if kind == "break" and ctx.kind == "for":  # pragma: no cover - planned as a loop
            raise self.err("CT9002", "a `for` planned without `break` breaks", span)
        vals = self.exit_values(ctx, span)
        if kind == "continue" and ctx.iv is not None:
            assert ctx.step is not None
            vals.insert(0, self.b.binary("addi", ctx.iv, ctx.step))
        self.b.op(kind, vals, [])
        self.low.exited = True

    def exit_values(self, ctx: LoopCtx, span: K.Span) -> list[Value]:
        out: list[Value] = []
        for i, n in enumerate(ctx.carried):
            v = self.env.get(n)
            if v is None:
                raise self.err(
                    "CT3017", f"`{n}` is not defined here, where the loop goes round", span,
                    "loop", help=f"`{n}` was the variable of a `for` loop inside this one, "
                    "and a `for` variable is not visible after its loop: use another name",
                )
            if ctx.scratch:
                t = self.widen(ctx.templates[i], v)
                if t != ctx.templates[i]:
                    ctx.templates[i], ctx.changed = t, True
            out.extend(self.flatten(v, ctx.templates[i], n, span))
        if ctx.scratch and RETVAL in self.env and RETVAL not in ctx.carried:
            ctx.ret_template.append(self.template_of(self.env[RETVAL], RETVAL, span))
        out.extend(self.low.tokens[k] for k in ctx.token_keys)
        return out

    def lower_for(self, s: K.For) -> None:
        it = self.low.expr(s.iter)
        if self.low.facts is not None and (self.low.call_path, s.nid) in \
                self.low.facts.folded_branches:
            # The checker read no iteration of a range of literals that runs none
            # (`range(0)`): nothing is emitted, and its body is never read.
            parts = (it.start, it.stop, it.step) if isinstance(it, RangeV) else ()
            # a bool bound is the integer the checker read (`range(False)` runs none)
            bounds = [int(v.value) for v in parts
                      if isinstance(v, ConstV) and isinstance(v.value, int)]
            runs: LVal = ConstV(len(range(*bounds)) > 0) if len(bounds) == 3 else it
            self.low.fold(s.nid, runs, s.iter.span, "empty `for` loop")
            return
        if not isinstance(it, (RangeV, MappedRangeV)):
            raise self.err(
                "CT0001", "a kernel `for` loop must iterate over `range(...)` or "
                "`z.iter_indices()`", s.iter.span, "not a range",
            )
        if isinstance(it, RangeV) and not isinstance(s.target, K.NameTarget):
            raise self.err("CT0001", "the loop variable must be a single name", s.target.span)
        sched = None
        if isinstance(it, MappedRangeV):
            # the checker's schedule for this loop (keyed by the `iter_indices` call)
            self.low.op_node = s.iter.nid
            sched = self.low.schedule.fact(it, s.iter.span)
            lo, hi, step = self.low.schedule.mapped_bounds(it, sched)
        else:
            lo = self.low.index_value(it.start, s.iter.span)
            hi = self.low.index_value(it.stop, s.iter.span)
            step = self.low.index_value(it.step, s.iter.span)
        counted = _breaks(s.body) or _returns(s.body)
        unit = isinstance(it, RangeV) and isinstance(it.step, ConstV) and it.step.value == 1
        if isinstance(it, RangeV) and not isinstance(it.step, ConstV):
            # Tile IR's `for` requires a positive step (a step of 0 or less is undefined
            # behaviour), and a counting `loop` would not end without one. The checker
            # decides how (obligation `loop-step-positive`, on the `range` call): at launch,
            # or by this device check before either loop form, at the step the loop runs
            # with (an i64 step truncated to 32 bits included). A compile-time step is
            # CT3039. Without the checker's facts (the compiler's own tests) the check stays.
            self.low.op_node = s.iter.nid
            self.low.require_fact(s.iter.span, "range() step")
            if self.low.facts is None or self.low.needs_device_check():
                zero = self.b.scalar_const(0, dt.i32)
                self.b.assert_(self.b.cmp("cmpi", "greater_than", step, zero),
                               "range() step must be positive")
        self.low.op_node = s.iter.nid
        if self.low.loop_counter_bits(s.iter.span, unit) == 64:
            # The checker's width (`effects::counter_bits`): a 32-bit counter that passes
            # 2^31 - 1 wraps on the GPU and the loop goes on; a counting `loop` adds the
            # step itself. In 64 bits `iv + step` < 2^32 cannot wrap.
            lo, hi, step = (self.arith.convert(TileV(v), dt.i64).v for v in (lo, hi, step))

        def bind(iv: Value) -> None:
            if iv.type != scalar(dt.i32):
                iv = self.arith.convert(TileV(iv), dt.i32).v
            self.low.schedule.bind_target(s.target, it, iv, sched)

        def head(ctx: LoopCtx) -> None:
            if ctx.iv is not None:  # a counting `loop`: leave it at the bound
                self.exit_unless(self.b.cmp("cmpi", "less_than", ctx.iv, hi), ctx, s.span)

        self.run_loop(s, s.body, s.span, "loop" if counted else "for",
                      _target_names(s.target), head, bind, (lo, hi, step))

    def lower_while(self, s: K.While) -> None:
        # A test the checker folded (`Lowerer.fold`): `while False:` runs nothing, a true
        # one loops until a `break`.
        probe = Block()
        saved = self.snapshot()
        with self.b.at(probe):
            test = self.arith.truthy(self.low.expr(s.test), s.test.span)
        self.restore(saved)
        folded = self.low.fold(s.nid, test, s.test.span, "`while` test")
        if folded is False:
            return

        def head(ctx: LoopCtx) -> None:
            if folded:
                return
            _, c = self.low.condition(s.nid, s.test, s.test.span, "`while` test")
            assert c is not None
            self.exit_unless(c.v, ctx, s.span)

        self.run_loop(s, s.body, s.span, "loop", set(), head, None, None)

    def exit_unless(self, cond: Value, ctx: LoopCtx, span: K.Span) -> None:
        """Leave the loop (with the carried values as they are) where `cond` is false."""
        leave = Block()
        with self.b.at(leave):
            self.b.op("break", self.exit_values(ctx, span), [])
        stay = Block()
        with self.b.at(stay):
            self.b.op("yield", [], [])
        self.b.op("if", [cond], [], {}, [stay, leave])

    def run_loop(self, loop: K.For | K.While, body: list[K.Stmt], span: K.Span, kind: str,
                 targets: set[str], head: Callable[[LoopCtx], None],
                 bind: Callable[[Value], None] | None,
                 bounds: tuple[Value, Value, Value] | None) -> None:
        """Lower a loop: scratch passes of the body settle the carried names' templates
        (a tile carried in may come back another type), then the body is lowered once
        more with them. A loop entered again in the same state (`plan_key`: an inner loop,
        lowered on every pass of the loops around it) takes the plan it settled the first
        time instead of passing again; inside a scratch pass, where its ops are thrown
        away, its body is not lowered at all. Each body is then lowered a bounded number
        of times, not once per pass of every loop around it (2^depth)."""
        assigned = _assigned_in(body) - targets
        if _returns(body):
            assigned |= {RETURNED, RETVAL}
        key = self.plan_key(loop, kind, assigned, bounds)
        plan = self.plans.get(key)
        record = plan is None
        if plan is None:
            self.scratch_depth += 1
            try:
                before, carried, token_keys, ctx, ret = self._settle(
                    body, span, kind, assigned, head, bind, bounds)
            finally:
                self.scratch_depth -= 1
            # Recorded only once the body is also lowered with them (below): a plan reused
            # is one whose whole lowering succeeded.
            plan = LoopPlan(ret, list(ctx.templates))
        else:
            if plan.ret is not None:
                self.env[RETVAL] = self.placeholder(plan.ret)
            before = self.snapshot()
            carried = [n for n in before.env if n in assigned]
            token_keys = list(before.tokens)
            ctx = LoopCtx(kind, carried, list(plan.templates), token_keys, span,
                          scratch=False)
        ctx.scratch = False
        inits: list[Value] = []
        for n, t in zip(carried, ctx.templates, strict=True):
            inits += self.flatten(before.env[n], t, n, span)
        inits += [before.tokens[k] for k in token_keys]
        result_types = [v.type for v in inits]
        block = Block()
        if record or self.scratch_depth == 0:
            self._loop_body(ctx, body, before, head, bind, bounds, block)
        if record:
            self.plans[key] = plan
        if kind == "for":
            assert bounds is not None
            op = self.b.op("for", [*bounds, *inits], result_types, {}, [block])
        elif bounds is not None:
            op = self.b.op("loop", [bounds[0], *inits], result_types, {}, [block])
        else:
            op = self.b.op("loop", inits, result_types, {}, [block])
        self.restore(before)
        results = iter(op.results)
        for n, t in zip(carried, ctx.templates, strict=True):
            self.env[n] = self.rebuild(t, results)
        for k in token_keys:
            self.low.tokens[k] = next(results)
        for n in targets:
            self.env.pop(n, None)  # a `for` variable is not visible after its loop

    def _settle(self, body: list[K.Stmt], span: K.Span, kind: str, assigned: set[str],
                head: Callable[[LoopCtx], None], bind: Callable[[Value], None] | None,
                bounds: tuple[Value, Value, Value] | None
                ) -> tuple[State, list[str], list[str], LoopCtx, Template | None]:
        """The scratch passes of a loop body: its state on entry (`$retval` defined first
        where the body sets it), the carried names, the tokens and the settled context."""
        ret: Template | None = None
        while True:
            before = self.snapshot()
            carried = [n for n in before.env if n in assigned]
            templates = [self.template_of(before.env[n], n, span) for n in carried]
            token_keys = list(before.tokens)
            ctx = LoopCtx(kind, carried, templates, token_keys, span, scratch=True)
            for _ in range(3):
                ctx.changed = False
                self._loop_body(ctx, body, before, head, bind, bounds, Block())
                if not ctx.changed:
                    break
            self.restore(before)
            if RETVAL not in assigned or RETVAL in carried or not ctx.ret_template:
                return before, carried, token_keys, ctx, ret
            # `$retval` first set inside the loop: define it before, then plan again.
            ret = ctx.ret_template[0]
            self.env[RETVAL] = self.placeholder(ret)

    def plan_key(self, loop: K.For | K.While, kind: str, assigned: set[str],
                 bounds: tuple[Value, Value, Value] | None) -> tuple[object, ...]:
        """All a loop's lowering reads of the state it is entered in: where it is (its node
        and the inlined calls it sits in), the names its statements read or assign, in the
        environment's order (tiles by type, constants by value, tuples item by item,
        anything else by identity; which of them are the same value), the tokens and the
        bounds' types. Two entries with the same key lower the same way."""
        reads = self._reads.get(id(loop))
        if reads is None:
            reads = frozenset(_names_in(loop)) | assigned | {RETURNED, RETVAL}
            self._reads[id(loop)] = reads
        same: dict[int, int] = {}
        env = tuple((n, self._shape(v, same)) for n, v in self.env.items() if n in reads)
        tokens = tuple((k, self._shape(TileV(v), same)) for k, v in self.low.tokens.items())
        edges = tuple(self._shape(TileV(v), same) for v in bounds) if bounds else ()
        return (self.low.call_path, id(loop), kind, self.low.inline_depth,
                self.frame.function.name, env, tokens, edges)

    def _shape(self, v: LVal, same: dict[int, int]) -> object:
        if isinstance(v, TileV):
            return ("tile", v.v.type, same.setdefault(id(v.v), len(same)))
        if isinstance(v, ConstV):
            x = v.value  # a float by its bits: -0.0 == 0.0, and nan != nan
            return ("const", type(x).__name__, x.hex() if isinstance(x, float) else x)
        if isinstance(v, TupleV):
            return ("tuple", tuple(self._shape(x, same) for x in v.items))
        self._pinned.append(v)
        return ("object", id(v))

    def _loop_body(self, ctx: LoopCtx, body: list[K.Stmt], before: State,
                   head: Callable[[LoopCtx], None], bind: Callable[[Value], None] | None,
                   bounds: tuple[Value, Value, Value] | None, block: Block) -> None:
        """Lower one loop body into `block` (its arguments made here) with `ctx` on the
        loop stack."""
        self.restore(before)
        block.args.clear()
        iv = Value(bounds[0].type, "iv") if bounds is not None else None
        step = bounds[2] if bounds is not None else None
        if iv is not None:
            block.args.append(iv)
        ctx.iv = iv if ctx.kind == "loop" else None
        ctx.step = step if ctx.kind == "loop" else None
        for n, t in zip(ctx.carried, ctx.templates, strict=True):
            args = [Value(ty, n.lstrip("$")) for ty in self.flat_types(t)]
            block.args.extend(args)
            self.env[n] = self.rebuild(t, iter(args))
        if RETURNED in ctx.carried:
            self.env[RETURNED] = ConstV(False)  # an iteration starts only if none returned
        for k in ctx.token_keys:
            a = Value(before.tokens[k].type, k.lstrip("$"))
            block.args.append(a)
            self.low.tokens[k] = a
        self.frame.loops.append(ctx)
        saved_exit = self.low.exited
        try:
            with self.b.at(block):
                self.low.exited = False
                head(ctx)
                if not self.low.exited:
                    if iv is not None and bind is not None:
                        bind(iv)
                    self.low.lower_block(body)
                if not self.low.exited:
                    self.exit_loop("continue", ctx.span)
        finally:
            self.frame.loops.pop()
            self.low.exited = saved_exit


def _target_names(t: K.Target) -> set[str]:
    if isinstance(t, K.NameTarget):
        return {t.id}
    out: set[str] = set()
    for x in t.elts:
        out |= _target_names(x)
    return out


def _assigned_in(stmts: list[K.Stmt]) -> set[str]:
    out: set[str] = set()
    for s in _walk(stmts):
        if isinstance(s, K.Assign):
            for t in s.targets:
                out |= _target_names(t)
        elif isinstance(s, (K.AugAssign, K.For)):
            out |= _target_names(s.target)
    return out


def _names_in(node: object) -> Iterator[str]:
    """Every name a piece of the kernel AST reads or assigns."""
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, (K.Name, K.NameTarget)):
            yield x.id
        elif dataclasses.is_dataclass(x) and not isinstance(x, (type, K.Span)):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))


def _walk(stmts: list[K.Stmt], into_loops: bool = True) -> Iterator[K.Stmt]:
    for s in stmts:
        yield s
        if isinstance(s, K.If):
            yield from _walk(s.body, into_loops)
            yield from _walk(s.orelse, into_loops)
        elif isinstance(s, K.Unsafe):
            yield from _walk(s.body, into_loops)
        elif isinstance(s, (K.For, K.While)) and into_loops:
            yield from _walk(s.body, into_loops)


def _breaks(stmts: list[K.Stmt]) -> bool:
    """A `break` of this loop (not of a loop inside it)."""
    return any(isinstance(s, K.Break) for s in _walk(stmts, into_loops=False))


def _returns(stmts: list[K.Stmt]) -> bool:
    return any(isinstance(s, K.Return) for s in _walk(stmts))


def contains_return(s: K.Stmt) -> bool:
    return _returns([s])
