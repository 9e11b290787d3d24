"""Kernel AST + specialization -> Tile IR module (and the kernel's parameter layout).

Lowering happens once per specialization (Const values and argument facts known), after the
Rust checker accepted the kernel. Types are inferred here, with concrete shapes; a mistake
found here is a `KernelCheckError` with a CT3xxx code pointing at the source.

Memory ordering: each `Mut` tensor carries a token threaded through its loads and stores in
program order (a block may re-read what it stored); loads of shared tensors need none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import dtypes as dt
from ..frontend import kast as K
from ..frontend.diagnostics import FrontendError, fail
from ..ir import (
    Block,
    Bounded,
    Builder,
    DivBy,
    Location,
    Module,
    Op,
    PointerType,
    Value,
    scalar,
    tile,
)
from .arith import Arith
from .control_flow import RETURNED, ControlFlow, Frame, contains_return, same_constant
from .facts import LoweringFacts, Node
from .ops.pointers import pointer_misuse
from .signature import SCALAR_FMT, KernelABI, Slot, Specialization
from .tile_limits import check_tile_shape, check_tile_size
from .values import ByTargetV, ConstV, DTypeV, LVal, SliceV, TensorV, TileV, TupleV


@dataclass
class LoweredKernel:
    module: Module
    abi: KernelABI
    entry_name: str
    consts: dict[str, int | float | bool]
    # Compiled for programmatic dependent launch (`lowering/pdl.py`): the launcher reads
    # this from the compiled kernel, and only then launches it with the PDL attribute.
    pdl: bool = False
    # The read-only tensor parameters loaded ahead of the PDL wait (`pdl_early`, those
    # that have such a load): the launcher gives the PDL attribute only while no work in
    # flight may write them.
    pdl_early: tuple[str, ...] = ()


class Lowerer:
    def __init__(
        self,
        doc: K.Document,
        spec: Specialization,
        facts: LoweringFacts | None = None,
        pdl: bool = False,
        pdl_early: tuple[str, ...] = (),
        pdl_trigger_first: bool = False,
    ) -> None:
        self.doc = doc
        self.pdl = pdl
        self.pdl_early = pdl_early
        self.pdl_trigger_first = pdl_trigger_first
        # each tensor parameter's view (what a load from it traces back to)
        self.param_views: dict[str, Value] = {}
        self.spec = spec
        # What the checker decided, node by node (None: lowering without the checker).
        self.facts = facts
        # `call_device` node ids from the entry to the function being lowered, and the DSL
        # call being lowered: together they name the checker's facts for it.
        self.call_path: tuple[int, ...] = ()
        # The call site of the device function being inlined (None in the entry's body).
        self.inlined_at: Location | None = None
        self.op_node = 0
        self.consts = spec.const_dict()
        self.b = Builder(Module(doc.entry))
        self.arith = Arith(self)
        self.frame: Frame | None = None
        self.tokens: dict[str, Value] = {}
        self.views_block = Block()  # partition views, hoisted to the top of the entry
        self.block_ids: tuple[Value, Value, Value] | None = None
        self.index_dtype = dt.i32 if spec.index_bits == 32 else dt.i64
        self.inline_depth = 0
        # The current position is unreachable: the block ended in `break` or `continue`.
        self.exited = False
        from .dsl_ops import DslOps
        from .schedule import Schedule

        self.ops = DslOps(self)
        self.cf = ControlFlow(self)
        self.schedule = Schedule(self)

    # ------------------------------------------------------------------ diagnostics

    def error(
        self, code: str, message: str, span: K.Span, label: str = "", *, help: str | None = None
    ) -> FrontendError:
        return fail(code, message, span, label, help=help)

    def location(self, span: K.Span) -> Location:
        path = self.doc.files[span.file].path if span.file < len(self.doc.files) else "<kernel>"
        name = self.frame.function.name if self.frame else self.doc.entry
        return Location(path, span.line, span.col, name, self.inlined_at)

    # ------------------------------------------------------------------ entry

    def lower(self) -> LoweredKernel:
        entry = self.doc.function(self.doc.entry)
        slots: list[Slot] = []
        types: list[Any] = []
        idx_fmt = "i" if self.spec.index_bits == 32 else "q"
        idx_ty = scalar(self.index_dtype)
        for p in entry.params:
            if p.kind in ("mut_tensor", "tensor", "atomic_tensor"):
                facts = self.spec.tensor(p.name)
                assert p.dtype is not None
                types.append(tile((), PointerType(dt.from_name(p.dtype))))
                slots.append(Slot("ptr", p.name, 0, "Q"))
                for axis in range(facts.rank):
                    types.append(idx_ty)
                    slots.append(Slot("shape", p.name, axis, idx_fmt))
                for axis in range(facts.rank):
                    types.append(idx_ty)
                    slots.append(Slot("stride", p.name, axis, idx_fmt))
            elif p.kind == "scalar":
                assert p.dtype is not None
                d = dt.from_name(p.dtype)
                if d.name not in SCALAR_FMT:
                    raise self.error("CT3010", f"`{d.name}` scalars cannot be kernel arguments",
                                     p.span, "parameter", help="pass an `f32` scalar and "
                                     "convert it in the kernel (`s.astype(...)`)")
                types.append(scalar(d))
                slots.append(Slot("scalar", p.name, 0, SCALAR_FMT[d.name]))
            elif p.kind == "ptr":
                assert p.dtype is not None
                types.append(tile((), PointerType(dt.from_name(p.dtype))))
                slots.append(Slot("ptr", p.name, 0, "Q"))
            elif p.kind == "const":
                if p.name not in self.consts:
                    raise self.error(
                        "CT3011", f"no value for `Const` parameter `{p.name}`", p.span,
                        "needs a value",
                        help=f"pass `{p.name}=...` at the call, or use it in a tensor shape",
                    )
            else:
                raise self.error("CT3010", f"entry parameter kind `{p.kind}` unsupported",
                                 p.span, "parameter")
        loc = self._loc_of(entry.span, entry.name)
        fn = self.b.entry(entry.name, types, loc)
        self.frame = self._new_frame(entry, {})
        body_block = fn.body
        prologue = Block()
        with self.b.at(prologue), self.b.location(loc):
            self._bind_entry_params(entry, fn.params)
        with self.b.at(body_block), self.b.location(loc):
            self.lower_block(entry.body)
            self.b.return_()
        # prologue (params, block ids) -> hoisted partition views -> body
        body_block.ops[:0] = prologue.ops + self.views_block.ops
        if self.pdl:
            # The grid-dependency wait goes first, and every memory access is ordered
            # after it through its token: the PDL prologue and why it keeps stream order
            # are in `lowering/pdl.py` (and docs/pdl.md).
            from .pdl import add_prologue

            early = {self.param_views[n]: n for n in self.pdl_early if n in self.param_views}
            found = add_prologue(self.b, fn, early, self.pdl_trigger_first)
        else:
            found = ()
        return LoweredKernel(self.b.module, KernelABI(tuple(slots)), entry.name, self.consts,
                             self.pdl, found)

    def _loc_of(self, span: K.Span, fn_name: str) -> Location:
        path = self.doc.files[span.file].path if span.file < len(self.doc.files) else "<kernel>"
        return Location(path, span.line, span.col, fn_name)

    def _bind_entry_params(self, entry: K.Function, values: list[Value]) -> None:
        assert self.frame is not None
        env = self.frame.env
        it = iter(values)
        b = self.b
        self.block_ids = b.block_ids()
        from .ops.debug import PRINT_TOKEN, prints

        if prints(self.doc):
            self.tokens[PRINT_TOKEN] = b.make_token()
        for p in entry.params:
            if p.kind in ("mut_tensor", "tensor", "atomic_tensor"):
                facts = self.spec.tensor(p.name)
                assert p.dtype is not None
                base = next(it)
                if facts.base_align16:
                    base = b.assume(base, DivBy(16))
                dims_in = [next(it) for _ in range(facts.rank)]
                strides_in = [next(it) for _ in range(facts.rank)]
                shape_items: list[Value | int] = []
                shape_vals: list[LVal] = []
                for axis, v in enumerate(dims_in):
                    static = self._static_dim(p, axis)
                    if static is not None:
                        shape_items.append(static)
                        shape_vals.append(ConstV(static))
                    else:
                        v = b.assume(v, Bounded(0, None))
                        if facts.shape_div[axis] > 1:
                            v = b.assume(v, DivBy(facts.shape_div[axis]))
                        shape_items.append(v)
                        shape_vals.append(TileV(v))
                stride_items: list[Value | int] = []
                for axis, v in enumerate(strides_in):
                    if axis == facts.rank - 1 and facts.last_stride_one:
                        stride_items.append(1)
                        continue
                    v = b.assume(v, Bounded(0, None))
                    if facts.stride_div[axis] > 1:
                        v = b.assume(v, DivBy(facts.stride_div[axis]))
                    stride_items.append(v)
                view = b.make_tensor_view(base, shape_items, stride_items)
                self.param_views[p.name] = view
                tile_shape = None
                if p.kind == "mut_tensor":
                    tile_shape = tuple(self._resolve_dim(d, p) for d in (p.shape or []))
                if p.kind != "tensor":  # outputs and atomics order their accesses
                    self.tokens[p.name] = b.make_token()
                env[p.name] = TensorV(
                    p.name, dt.from_name(p.dtype), view, tuple(shape_vals),
                    p.kind == "mut_tensor", tile_shape, base=base,
                    strides=tuple(stride_items), atomic=p.kind == "atomic_tensor",
                )
            elif p.kind in ("scalar", "ptr"):
                env[p.name] = TileV(next(it))
            elif p.kind == "const":
                env[p.name] = ConstV(self.consts[p.name])
        self.ops.bind_pointer_token()

    def _static_dim(self, p: K.Param, axis: int) -> int | None:
        if p.kind not in ("tensor", "atomic_tensor") or p.shape is None:
            return None
        d = p.shape[axis]
        if isinstance(d, str):
            v = self.consts.get(d)
            return int(v) if v is not None else None
        return None if d == -1 else int(d)

    def _resolve_dim(self, d: int | str, p: K.Param) -> int:
        if isinstance(d, str):
            v = self.consts.get(d)
            if v is None:
                raise self.error("CT3011", f"no value for `{d}` in the shape of `{p.name}`",
                                 p.span, "unknown size")
            return int(v)
        return d

    # ------------------------------------------------------------------ statements

    def lower_block(self, stmts: list[K.Stmt]) -> None:
        for i, s in enumerate(stmts):
            assert self.frame is not None
            returned = self.frame.env.get(RETURNED)
            if self.exited or (isinstance(returned, ConstV) and returned.value):
                return  # unreachable in this specialization (a condition folded)
            with self.b.location(self.location(s.span)), pointer_misuse(self, s.span):
                self.lower_stmt(s)
                flag = self.cf.may_have_returned()
                if (flag is not None and not self.exited and contains_return(s)
                        and self.cf.after_return(flag, stmts[i + 1:], s.span)):
                    return

    def lower_stmt(self, s: K.Stmt) -> None:
        assert self.frame is not None
        if isinstance(s, K.Assign):
            value = self.expr(s.value)
            for t in s.targets:
                self.assign(t, value)
        elif isinstance(s, K.AugAssign):
            cur = self.expr(_target_expr(s.target))
            self.assign(s.target, self.arith.binop(s.op, cur, self.expr(s.value), s.span))
        elif isinstance(s, K.ExprStmt):
            self.expr(s.value)
        elif isinstance(s, K.If):
            self.cf.lower_if(s)
        elif isinstance(s, K.For):
            self.cf.lower_for(s)
        elif isinstance(s, K.While):
            self.cf.lower_while(s)
        elif isinstance(s, (K.Break, K.Continue)):
            if not self.frame.loops:  # pragma: no cover - the frontend refuses it
                raise self.error("CT0001", f"`{type(s).kind}` outside a loop", s.span)
            self.cf.exit_loop(type(s).kind, s.span)
        elif isinstance(s, K.Pass):
            pass
        elif isinstance(s, K.Return):
            self.cf.lower_return(s)
        elif isinstance(s, K.Unsafe):
            self.lower_block(s.body)
        elif isinstance(s, K.Assert):
            self.lower_assert(s)
        else:  # pragma: no cover - the frontend produces nothing else
            raise self.error("CT9002", f"unknown statement {type(s).__name__}", s.span)

    def _new_frame(self, fn: K.Function, env: dict[str, LVal]) -> Frame:
        frame = Frame(fn, env)
        if any(contains_return(s) for s in fn.body):
            frame.env[RETURNED] = ConstV(False)
        return frame

    def assign(self, target: K.Target, value: LVal) -> None:
        assert self.frame is not None
        if isinstance(target, K.NameTarget):
            self.frame.env[target.id] = value
            return
        items = self._unpack(value, len(target.elts), target.span)
        for t, v in zip(target.elts, items, strict=True):
            self.assign(t, v)

    def _unpack(self, value: LVal, n: int, span: K.Span) -> tuple[LVal, ...]:
        if isinstance(value, TupleV):
            if len(value.items) != n:
                raise self.error("CT3013", f"cannot unpack {len(value.items)} values into {n}",
                                 span, "targets", help=f"write {len(value.items)} names, or "
                                 "index the tuple (`v[0]`)")
            return value.items
        raise self.error("CT3013", "only tuples can be unpacked", span, "targets",
                         help="unpack a shape (`m, n = z.shape`) or a tuple; a tile is "
                         "one value")

    def lower_assert(self, s: K.Assert) -> None:
        cond = self.arith.truthy(self.expr(s.test), s.span)
        if isinstance(cond, ConstV):
            if not cond.value:
                raise self.error("CT3014", "this assertion is always false", s.span,
                                 "fails for every block", help="correct the condition, or "
                                 "compile with `Const` values that satisfy it")
            return
        assert isinstance(cond, TileV)
        msg = s.msg or "assertion failed"
        self.b.op("assert", [cond.v], [], {"message": msg})

    def index_value(self, v: LVal, span: K.Span) -> Value:
        if isinstance(v, ConstV) and isinstance(v.value, int) and not isinstance(v.value, bool):
            return self.arith.const_tile(v.value, dt.i32, (), span).v
        if isinstance(v, TileV) and v.shape == () and v.dtype.is_int:
            return self.arith.convert(v, dt.i32).v
        raise self.error("CT3016", "loop bounds must be integers", span, "not an integer",
                         help="convert a float bound with `int(...)`, or pass an integer "
                         "scalar (`n: i32`)")

    # ------------------------------------------------------------------ expressions

    def expr(self, e: K.Expr) -> LVal:
        assert self.frame is not None
        with self.b.location(self.location(e.span)), pointer_misuse(self, e.span):
            v = self._expr(e)
        if isinstance(v, TileV):
            # Every tile an expression makes (a broadcast, an `mma`, a load) is named at
            # the expression that made it, not at the IR verifier.
            check_tile_size(v.shape, e.span)
        return v

    def _expr(self, e: K.Expr) -> LVal:
        assert self.frame is not None
        if isinstance(e, K.Name):
            v = self.frame.env.get(e.id)
            if v is None:
                raise self.error(
                    "CT3017", f"`{e.id}` is not defined here", e.span, "undefined",
                    help="a name assigned only inside a loop or one branch is not visible after it",
                )
            return v
        if isinstance(e, K.Const):
            return ConstV(e.value)
        if isinstance(e, K.DTypeRef):
            return DTypeV(dt.from_name(e.name))
        if isinstance(e, K.Tuple):
            return TupleV(tuple(self.expr(x) for x in e.elts))
        if isinstance(e, K.BinOp):
            return self.arith.binop(e.op, self.expr(e.left), self.expr(e.right), e.span)
        if isinstance(e, K.Unary):
            return self.arith.unary(e.op, self.expr(e.operand), e.span)
        if isinstance(e, K.Compare):
            return self.arith.compare(e.op, self.expr(e.left), self.expr(e.right), e.span)
        if isinstance(e, K.BoolOp):
            return self._boolop(e)
        if isinstance(e, K.IfExp):
            taken, c = self.condition(e.nid, e.test, e.span, "conditional expression")
            if taken is not None:
                return self.expr(e.body if taken else e.orelse)
            a, b = self.expr(e.body), self.expr(e.orelse)
            kept = same_constant(a, b)
            if kept is not None:  # one number either way: no select makes it a device value
                return kept
            x, y = self.arith.unify(a, b, e.span)
            assert c is not None
            cond = self.arith.broadcast_to(c, x.shape, e.span)
            return TileV(self.b.select(cond.v, x.v, y.v))
        if isinstance(e, K.Call):
            return self.ops.call(e)
        if isinstance(e, K.CallDevice):
            return self.call_device(e)
        if isinstance(e, K.Method):
            return self.ops.method(e)
        if isinstance(e, K.Attribute):
            return self.ops.attribute(e)
        if isinstance(e, K.Subscript):
            return self._subscript(e)
        if isinstance(e, K.ByTarget):
            pairs = list(zip(e.archs, e.values, strict=True))
            return ByTargetV({a: self.expr(v) for a, v in pairs}, {a: v.span for a, v in pairs})
        raise self.error("CT9002", f"unknown expression {type(e).__name__}", e.span)

    def _boolop(self, e: K.BoolOp) -> LVal:
        """`a and b` / `a or b` as Python reads them: the value of the operand that decides
        (`n or 16` is `n` where `n` is not 0), not a bool. Every operand is evaluated (the
        frontend refuses one with an effect past the first, `frontend/effects.py`) and must
        be able to be a condition (a number or a scalar)."""
        raw = [self.expr(v) for v in e.values]
        truth = [self.arith.truthy(x, v.span) for x, v in zip(raw, e.values, strict=True)]
        acc, acc_truth = raw[0], truth[0]
        for v, v_truth in zip(raw[1:], truth[1:], strict=True):
            if isinstance(acc_truth, ConstV):
                # decided at compile time, exactly as Python decides it
                if bool(acc_truth.value) == (e.op == "and"):
                    acc, acc_truth = v, v_truth
                continue
            assert isinstance(acc_truth, TileV)
            if _is_bool(acc) and _is_bool(v):
                if isinstance(v_truth, ConstV):
                    keep = (e.op == "and") == bool(v_truth.value)
                    acc = acc_truth if keep else ConstV(e.op == "or")
                else:
                    assert isinstance(v_truth, TileV)
                    acc = TileV(self.b.binary("andi" if e.op == "and" else "ori",
                                              acc_truth.v, v_truth.v))
                acc_truth = self.arith.truthy(acc, e.span)
                continue
            x, y = self.arith.unify(acc, v, e.span)
            first, second = (y, x) if e.op == "and" else (x, y)
            acc = TileV(self.b.select(acc_truth.v, first.v, second.v))
            acc_truth = self.arith.truthy(acc, e.span)
        return acc

    def _subscript(self, e: K.Subscript) -> LVal:
        base = self.expr(e.value)
        idx = self.expr(e.index)
        if isinstance(base, TileV) or isinstance(idx, SliceV):
            return self.ops.subscript(base, idx, e.span)  # lowering/ops/slicing.py
        if isinstance(base, TupleV) and isinstance(idx, ConstV) and isinstance(idx.value, int):
            try:
                return base.items[idx.value]
            except IndexError:
                raise self.error("CT3018", f"index {idx.value} out of range", e.span,
                                 "out of range", help=_tuple_items(len(base.items))
                                 ) from None
        raise self.error(
            "CT3018", "only tuples and tiles can be indexed in kernels", e.span,
            "not indexable", help="load a tile first (`x.load_tile(...)[i]`), or index a "
            "shape (`x.shape[0]`)",
        )

    def call_device(self, e: K.CallDevice) -> LVal:
        assert self.frame is not None
        # The frontend bound the arguments to the callee's parameters, in order.
        return self.inline_device(e, [self.expr(a) for a in e.args])

    def inline_device(self, e: K.CallDevice, args: list[LVal]) -> LVal:
        """The body of `e`'s device function, inlined at the builder's insertion point
        with `args` for its parameters (as the checker reads it: under `e`'s node id)."""
        assert self.frame is not None
        fn = self.doc.function(e.func)
        if self.inline_depth > 32:
            raise self.error(
                "CT3019", f"`{fn.name}` would be inlined {self.inline_depth + 1} calls deep; "
                "device function calls nest at most 32 deep", e.span, "call",
                help="flatten the chain of helpers (a loop with `range` repeats work)")
        if len(args) != len(fn.params):  # pragma: no cover - the frontend's binding
            raise self.error("CT9002", f"`{fn.name}` got {len(args)} arguments", e.span, "call")
        env: dict[str, LVal] = {p.name: a for p, a in zip(fn.params, args, strict=True)}
        saved, saved_site, saved_exit = self.frame, self.inlined_at, self.exited
        call_site = self.location(e.span)
        self.frame = self._new_frame(fn, env)
        self.inlined_at = call_site
        self.inline_depth += 1
        self.call_path = (*self.call_path, e.nid)
        try:
            self.lower_block(fn.body)
            result = self.cf.function_result(e.span)
        finally:
            self.inlined_at = saved_site
            self.call_path = self.call_path[:-1]
            self.inline_depth -= 1
            self.frame = saved
            self.exited = saved_exit
        return result

    # ------------------------------------------------------------------ checker facts

    def node(self) -> Node:
        """The DSL call being lowered, as the checker's facts name it."""
        return (self.call_path, self.op_node)

    def needs_device_check(self) -> bool:
        return self.facts is not None and self.node() in self.facts.device_checks

    def loop_counter_bits(self, span: K.Span, unit_step: bool) -> int:
        """The width the checker chose for the counter of the `for` at `op_node`. Without
        facts (the compiler's own tests) every counter but a step-1 one is 64 bits."""
        if self.facts is None:
            return 32 if unit_step else 64
        bits = self.facts.loop_counters.get(self.node())
        if bits is None:
            raise self.error(
                "CT9002", "the checker has no fact for this loop; refusing to compile it",
                span, "unchecked loop",
                help="this is a bug in cutile (the checker and the compiler disagree); "
                "please report it with the kernel",
            )
        return bits

    def fold(self, nid: int, value: LVal, span: K.Span, what: str) -> bool | None:
        """The branch of the test at node `nid` (its value: `value`) that the compiler
        keeps, or None where it emits the test for the device. The checker decided which
        tests are folded (`KernelFacts.folded_branches`): exactly those are, to the branch
        it read (a test of literals) or to the one the `Const`s select (a test of `Const`s,
        whose branches it read as live each). A test it did not fold is emitted even where
        this specialization knows its value: the checker read both branches as live.
        Without facts (the compiler's own tests) every compile-time test is folded."""
        if self.facts is None:
            return bool(value.value) if isinstance(value, ConstV) else None
        node = (self.call_path, nid)
        if node not in self.facts.folded_branches:
            return None
        read = self.facts.folded_branches[node]
        taken = bool(value.value) if isinstance(value, ConstV) else None
        if taken is None or (read is not None and read != taken):
            why = ("cannot evaluate it before the kernel runs" if taken is None else
                   f"finds it {taken}, the checker {read}")
            raise self.error(
                "CT9002", f"the checker folded this {what}, but the compiler {why}; "
                "refusing to compile it", span, "folded test",
                help="this is a bug in cutile (the checker and the compiler disagree); "
                "please report it with the kernel",
            )
        return taken

    def condition(self, nid: int, test: K.Expr, span: K.Span, what: str
                  ) -> tuple[bool | None, TileV | None]:
        """A test: the branch kept (`fold`), or the condition to emit (a compile-time value
        the checker did not fold becomes a constant `i1`)."""
        cond = self.arith.truthy(self.expr(test), span)
        taken = self.fold(nid, cond, span, what)
        if taken is not None:
            return taken, None
        if isinstance(cond, ConstV):
            cond = self.arith.const_tile(bool(cond.value), dt.bool_, (), span)
        assert isinstance(cond, TileV)
        return None, cond

    def require_fact(self, span: K.Span, what: str) -> None:
        """An access the checker must have decided about; without a fact the two readers
        of the kernel disagree, and nothing is emitted."""
        if self.facts is not None and self.node() not in self.facts.checked_nodes:
            raise self.error(
                "CT9002", f"the checker has no fact for this {what}; refusing to compile it",
                span, "unchecked access",
                help="this is a bug in cutile (the checker and the compiler disagree); "
                "please report it with the kernel",
            )

    # ------------------------------------------------------------------ helpers for ops

    def own_index(self, t: TensorV, span: K.Span) -> list[Value]:
        assert self.block_ids is not None
        if t.rank > 3:
            raise self.error("CT3021", f"`{t.param}` has rank {t.rank}; a partitioned output "
                             "has at most 3 dimensions (one per grid axis)", span, "rank > 3",
                             help="reshape the tensor on the host to 3 or fewer dimensions")
        return list(self.block_ids[: t.rank])

    def partition(
        self, t: TensorV, tile_shape: tuple[int, ...], padding: str | None, span: K.Span
    ) -> Value:
        if len(tile_shape) != t.rank:
            raise self.error(
                "CT3022", f"a tile of rank {len(tile_shape)} cannot index `{t.param}` of rank "
                f"{t.rank}", span, "rank mismatch",
            )
        check_tile_shape(tile_shape, span)
        if padding in ("pos_inf", "neg_inf") and t.dtype == dt.f8e4m3fn:
            raise self.error("CT3038", f"`{t.param}` holds f8e4m3fn, which has no infinity "
                             f"to pad with (`{padding}`)", span, "padding",
                             help="pad with `nan`, `zero` or `neg_zero`, or load f8e5m2")
        if padding not in (None, "zero") and not t.dtype.is_float:
            # tileiras refuses these (CT7004), and the interpreter stopped at run time
            raise self.error("CT3038", f"`{t.param}` holds `{t.dtype.name}`, which has no "
                             f"`{padding}` to pad with", span, "padding",
                             help="integer and bool tiles pad with `zero` (the default)")
        key = (tile_shape, padding, tuple(range(t.rank)))
        pv = t.partitions.get(key)
        if pv is None:
            with self.b.at(self.views_block):
                pv = self.b.make_partition_view(t.view, tile_shape, padding=padding)
            t.partitions[key] = pv
        return pv


def _target_expr(t: K.Target) -> K.Expr:
    if isinstance(t, K.NameTarget):
        return K.Name(t.id, t.span)
    return K.Tuple([_target_expr(x) for x in t.elts], t.span)


def lower_kernel(
    doc: K.Document, spec: Specialization, facts: LoweringFacts | None, pdl: bool = False,
    pdl_early: tuple[str, ...] = (), pdl_trigger_first: bool = False,
) -> LoweredKernel:
    return Lowerer(doc, spec, facts, pdl, pdl_early, pdl_trigger_first).lower()


__all__ = ["LoweredKernel", "Lowerer", "Op", "lower_kernel"]


def _is_bool(v: LVal) -> bool:
    """A bool value (`and`/`or` of bools stays a bitwise `andi`/`ori`)."""
    if isinstance(v, ConstV):
        return isinstance(v.value, bool)
    return isinstance(v, TileV) and v.dtype.is_bool


def _tuple_items(n: int) -> str:
    """Which indices a tuple of `n` items has, for a hint."""
    if n == 0:
        return "the tuple is empty"
    return "the tuple has one item, index 0" if n == 1 else \
        f"the tuple has {n} items, indexed 0 to {n - 1}"
