"""The fuzzer's own reading of integer index expressions: a tiny expression IR that renders
to kernel source and evaluates with the device's semantics, vectorized over many blocks.

The semantics are the lowering's (python/cutile/lowering/arith.py, dsl_ops.py), written down
independently so that a disagreement with the checker *or* the compiler shows up:

- literals and `Const` parameters are compile-time values; an operation on two of them is
  folded exactly (unbounded Python integers, Python's `//` and `%`);
- everything that depends on a block id, a grid size, a dynamic extent, a runtime scalar or
  a tile's `.item()` is a device integer (`i32`, or the value's own `i8`/`i16`/`i64`/`u8`/
  `u32`; two of them compute in their common type as numpy's promotion picks it: the wider
  of one kind, `u8 + i8 -> i16`, `u32 + i32 -> i64`) and every operation on it wraps in that
  type (two's complement; a `u8` computes modulo 2^8 and compares unsigned); a compile-time
  operand is converted to the device type first, and one that does not fit it does not
  compile (CT3052, as the checker and the lowering say); `int(x)` is `x` in `i32` (an `i64`
  truncated, a `u32` past 2^31 - 1 negative);
- `//` floors and `%` takes the divisor's sign (Python semantics, as the DSL documents);
  a zero divisor reads as 1 (`x // 0 == x`, `x % 0 == 0`), as the lowering defines it;
- `min`/`max` are signed; `cdiv(a, b)` folds exactly on constants, else is
  `a // b + (a % b != 0)` in device arithmetic (as the lowering emits it).

Values are `Val(v, kind)`: `kind` is "c" (a Python int, the same for every row) or the device
dtype name, with `v` a numpy int64 array holding the wrapped value for every row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

Array = np.ndarray

BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u32": 32}
UNSIGNED = {"u8", "u32"}


def wrap_int(v: int, bits: int) -> int:
    """Two's-complement truncation of a Python int to `bits` bits."""
    m = 1 << bits
    v %= m
    return v - m if v >= m >> 1 else v


def wrap_kind(v: int | Array, kind: str) -> int | Array:
    """`v` as a value of the device type `kind` (an unsigned one held non-negative)."""
    bits = BITS[kind]
    if kind in UNSIGNED:
        return v % (1 << bits) if isinstance(v, int) else v % np.int64(1 << bits)
    return wrap_int(v, bits) if isinstance(v, int) else wrap_arr(v, bits)


def fits(v: int, kind: str) -> bool:
    lo, hi = (0, 1 << BITS[kind]) if kind in UNSIGNED else \
        (-(1 << (BITS[kind] - 1)), 1 << (BITS[kind] - 1))
    return lo <= v < hi


def wrap_arr(a: Array, bits: int) -> Array:
    if bits == 64:
        return a  # int64 arithmetic already wraps modulo 2**64
    m = np.int64(1 << bits)
    h = np.int64(1 << (bits - 1))
    out: Array = ((a + h) % m) - h
    return out


# --------------------------------------------------------------------------- the IR


class Expr:
    """Base of index expressions. `prec` drives parenthesization when rendering."""

    prec = 9


@dataclass(frozen=True)
class Lit(Expr):
    value: int
    spelling: str = ""  # another way to write the value, e.g. "2 ** 30"
    prec = 9

    def __post_init__(self) -> None:
        if self.value < 0:
            object.__setattr__(self, "prec", 3)  # `-3` renders as a unary minus


@dataclass(frozen=True)
class Grid(Expr):
    """`block_id(axis)` or `num_blocks(axis)`; `kw` spells the axis as `axis=...`, and
    `bad_kw` misspells it (an unknown keyword)."""

    fn: str  # "block_id" | "num_blocks"
    axis: int
    kw: bool = False
    bad_kw: bool = False


@dataclass(frozen=True)
class ConstRef(Expr):
    name: str


@dataclass(frozen=True)
class ScalarRef(Expr):
    name: str


@dataclass(frozen=True)
class Var(Expr):
    """A kernel local, loop variable or device-function parameter."""

    name: str


@dataclass(frozen=True)
class ShapeOf(Expr):
    """`t.shape[axis]`."""

    tensor: str
    axis: int


@dataclass(frozen=True)
class TensorRef(Expr):
    """A shared input passed whole to a device function, which reads its extents
    (`t.shape[k]` of a parameter `t`): static where the input declares them."""

    name: str


@dataclass(frozen=True)
class NumTiles(Expr):
    """`num_tiles(t, axis)` (a `Mut`'s own tiles) or `num_tiles(t, axis, shape)`;
    `style` picks positional or keyword spelling."""

    tensor: str
    axis: int
    shape: tuple[int, ...] | None = None
    style: str = "pos"  # "pos" | "kw" | "allkw"


@dataclass(frozen=True)
class Bin(Expr):
    op: str  # "+" "-" "*" "//" "%"
    a: Expr
    b: Expr

    @property
    def prec(self) -> int:  # type: ignore[override]
        return 1 if self.op in "+-" else 2


@dataclass(frozen=True)
class Neg(Expr):
    a: Expr
    prec = 3


@dataclass(frozen=True)
class Call(Expr):
    """`min(a, b)`, `max(a, b)` (Python builtins) or `cdiv(a, b)`."""

    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Cmp:
    """A comparison `a op b` (a condition of `if`, `while`, `break`, `return`)."""

    op: str  # "<" "<=" "==" "!=" ">" ">="
    a: Expr
    b: Expr


@dataclass(frozen=True)
class IntOf(Expr):
    """`int(a)`: the value in `i32`."""

    a: Expr


@dataclass(frozen=True)
class DevFn:
    """A `@cutile.device` function that returns an integer expression of its parameters;
    with `guard` (cond, early) it returns `early` first where `cond` holds."""

    name: str
    params: tuple[str, ...]
    body: Expr
    module: str = ""  # which generated file holds it
    guard: tuple[Cmp, Expr] | None = None


@dataclass(frozen=True)
class DevCall(Expr):
    fn: DevFn
    args: tuple[Expr, ...]
    kw: bool = False  # pass the arguments by keyword


# --------------------------------------------------------------------------- rendering


def render(e: Expr) -> str:
    if isinstance(e, Lit):
        return e.spelling or str(e.value)
    if isinstance(e, Grid):
        if e.bad_kw:
            return f"{e.fn}(axs={e.axis})"
        return f"{e.fn}(axis={e.axis})" if e.kw else f"{e.fn}({e.axis})"
    if isinstance(e, (ConstRef, ScalarRef, Var, TensorRef)):
        return e.name
    if isinstance(e, ShapeOf):
        return f"{e.tensor}.shape[{e.axis}]"
    if isinstance(e, NumTiles):
        shape = None
        if e.shape is not None:
            shape = f"({e.shape[0]},)" if len(e.shape) == 1 else str(tuple(e.shape))
        if e.style == "allkw":
            tail = "" if shape is None else f", shape={shape}"
            return f"num_tiles(tensor={e.tensor}, axis={e.axis}{tail})"
        if e.style == "kw":
            tail = "" if shape is None else f", shape={shape}"
            return f"num_tiles({e.tensor}, axis={e.axis}{tail})"
        tail = "" if shape is None else f", {shape}"
        return f"num_tiles({e.tensor}, {e.axis}{tail})"
    if isinstance(e, Bin):
        left = render(e.a)
        if e.a.prec < e.prec:
            left = f"({left})"
        right = render(e.b)
        # right operands of equal precedence need parentheses (a - (b - c), a * (b // c))
        if e.b.prec <= e.prec:
            right = f"({right})"
        return f"{left} {e.op} {right}"
    if isinstance(e, Neg):
        inner = render(e.a)
        if e.a.prec < 9:
            inner = f"({inner})"
        return f"-{inner}"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(render(a) for a in e.args)})"
    if isinstance(e, IntOf):
        return f"int({render(e.a)})"
    if isinstance(e, DevCall):
        if e.kw:
            parts = [f"{p}={render(a)}" for p, a in zip(e.fn.params, e.args, strict=True)]
        else:
            parts = [render(a) for a in e.args]
        return f"{e.fn.name}({', '.join(parts)})"
    raise TypeError(f"cannot render {e!r}")


def render_cond(c: Cmp) -> str:
    return f"{render(c.a)} {c.op} {render(c.b)}"


def walk(e: Expr) -> list[Expr]:
    """Every node of `e` (device-function bodies included), pre-order."""
    out: list[Expr] = [e]
    if isinstance(e, Bin):
        out += walk(e.a) + walk(e.b)
    elif isinstance(e, (Neg, IntOf)):
        out += walk(e.a)
    elif isinstance(e, Call):
        for a in e.args:
            out += walk(a)
    elif isinstance(e, DevCall):
        for a in e.args:
            out += walk(a)
        out += walk(e.fn.body)
        if e.fn.guard is not None:
            cond, early = e.fn.guard
            out += walk(cond.a) + walk(cond.b) + walk(early)
    return out


def dev_fns(e: Expr) -> list[DevFn]:
    return [n.fn for n in walk(e) if isinstance(n, DevCall)]


# --------------------------------------------------------------------------- evaluation


@dataclass
class Val:
    v: int | Array
    kind: str  # "c" or a key of BITS


class ModelCompileError(Exception):
    """The expression cannot compile (e.g. a constant division by zero): the lowering is
    expected to refuse the kernel with a typed error."""


@dataclass
class Env:
    """Everything an expression may read, for `rows` rows at once (one row per block, or
    per (block, loop iteration))."""

    rows: int
    grid: tuple[int, int, int]
    block: tuple[Array, Array, Array]
    consts: Mapping[str, int]
    scalars: Mapping[str, tuple[str, int]]  # name -> (dtype, value)
    shapes: Mapping[str, tuple[int, ...]]  # actual tensor shapes
    static_dims: Mapping[str, tuple[int | None, ...]]  # compile-time dims (None: dynamic)
    tiles: Mapping[str, tuple[int, ...]]  # tile shape of each Mut
    local: dict[str, Val] = field(default_factory=dict)
    undef: Array | None = None

    def __post_init__(self) -> None:
        if self.undef is None:
            self.undef = np.zeros(self.rows, dtype=bool)


def _dev(v: Val, kind: str, rows: int) -> Array:
    """`v` as a device array of `kind`."""
    if v.kind == "c":
        assert isinstance(v.v, int)
        if not fits(v.v, kind):
            raise ModelCompileError(f"the constant {v.v} does not fit {kind}")  # CT3052
        return np.full(rows, v.v, dtype=np.int64)
    assert isinstance(v.v, np.ndarray)
    if v.kind == kind or common(v.kind, kind) == kind:
        return v.v  # a widening keeps the value, which the int64 array already holds
    out = wrap_kind(v.v, kind)
    assert isinstance(out, np.ndarray)
    return out


def common(a: str, b: str) -> str:
    """The type two device integers compute in (numpy's promotion, docs/dsl.md)."""
    if a == b:
        return a
    if (a in UNSIGNED) == (b in UNSIGNED):
        return max(a, b, key=lambda k: BITS[k])
    u, s = (a, b) if a in UNSIGNED else (b, a)
    if BITS[s] > BITS[u]:
        return s
    return {8: "i16", 16: "i32", 32: "i64"}[BITS[u]]


def _unify(a: Val, b: Val, rows: int) -> tuple[Array, Array, str]:
    kinds = [k for k in (a.kind, b.kind) if k != "c"]
    kind = kinds[0] if len(kinds) == 1 else common(kinds[0], kinds[1])
    return _dev(a, kind, rows), _dev(b, kind, rows), kind


def _fold(op: str, x: int, y: int) -> int:
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    y = y or 1  # a zero divisor reads as 1 (docs/dsl.md, integer division)
    return x // y if op == "//" else x % y


def binop(op: str, a: Val, b: Val, env: Env) -> Val:
    if a.kind == "c" and b.kind == "c":
        assert isinstance(a.v, int) and isinstance(b.v, int)
        return Val(_fold(op, a.v, b.v), "c")
    x, y, kind = _unify(a, b, env.rows)
    with np.errstate(all="ignore"):
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        else:
            safe = np.where(y == 0, 1, y)  # a zero divisor reads as 1
            r = np.floor_divide(x, safe) if op == "//" else np.mod(x, safe)
    return Val(wrap_kind(r, kind), kind)


def evaluate(e: Expr, env: Env) -> Val:
    if isinstance(e, Lit):
        return Val(e.value, "c")
    if isinstance(e, Grid):
        if e.bad_kw:
            raise ModelCompileError("unknown keyword")
        if e.fn == "block_id":
            return Val(env.block[e.axis], "i32")
        return Val(np.full(env.rows, env.grid[e.axis], dtype=np.int64), "i32")
    if isinstance(e, ConstRef):
        return Val(int(env.consts[e.name]), "c")
    if isinstance(e, ScalarRef):
        dtype, value = env.scalars[e.name]
        return Val(np.full(env.rows, wrap_kind(value, dtype), dtype=np.int64), dtype)
    if isinstance(e, Var):
        return env.local[e.name]
    if isinstance(e, ShapeOf):
        static = env.static_dims[e.tensor][e.axis]
        if static is not None:
            return Val(static, "c")
        n = env.shapes[e.tensor][e.axis]
        return Val(np.full(env.rows, wrap_int(n, 32), dtype=np.int64), "i32")
    if isinstance(e, NumTiles):
        if e.shape is not None:
            t = e.shape[e.axis]
        elif e.tensor in env.tiles:
            t = env.tiles[e.tensor][e.axis]
        else:
            raise ModelCompileError("num_tiles of a shared tensor needs a shape")
        return cdiv(evaluate(ShapeOf(e.tensor, e.axis), env), Val(t, "c"), env)
    if isinstance(e, Bin):
        return binop(e.op, evaluate(e.a, env), evaluate(e.b, env), env)
    if isinstance(e, Neg):
        a = evaluate(e.a, env)
        if a.kind == "c":
            assert isinstance(a.v, int)
            return Val(-a.v, "c")
        assert isinstance(a.v, np.ndarray)
        return Val(wrap_kind(-a.v, a.kind), a.kind)
    if isinstance(e, IntOf):
        a = evaluate(e.a, env)
        if a.kind == "c":
            return a
        assert isinstance(a.v, np.ndarray)
        return Val(wrap_arr(a.v, 32), "i32")
    if isinstance(e, Call):
        vals = [evaluate(a, env) for a in e.args]
        if e.fn == "cdiv":
            return cdiv(vals[0], vals[1], env)
        acc = vals[0]
        for v in vals[1:]:
            acc = minmax(e.fn, acc, v, env)
        return acc
    if isinstance(e, DevCall):
        pairs = list(zip(e.fn.params, e.args, strict=True))
        args = {p: evaluate(a, env) for p, a in pairs if not isinstance(a, TensorRef)}
        # a tensor parameter names the argument's extents inside the function
        tensors = {p: a.name for p, a in pairs if isinstance(a, TensorRef)}
        saved = env.local, env.shapes, env.static_dims
        env.local = args
        env.shapes = {**env.shapes, **{p: env.shapes[t] for p, t in tensors.items()}}
        env.static_dims = {**env.static_dims,
                           **{p: env.static_dims[t] for p, t in tensors.items()}}
        try:
            if e.fn.guard is None:
                return evaluate(e.fn.body, env)
            return _guarded(e.fn.guard, e.fn.body, env)
        finally:
            env.local, env.shapes, env.static_dims = saved
    raise TypeError(f"cannot evaluate {e!r}")


def test(c: Cmp, env: Env) -> bool | Array:
    """A condition: a Python bool when both sides are compile-time values (the compiler
    folds it and compiles one branch), else one bool per row (signed comparison)."""
    a, b = evaluate(c.a, env), evaluate(c.b, env)
    ops = {"<": np.less, "<=": np.less_equal, "==": np.equal, "!=": np.not_equal,
           ">": np.greater, ">=": np.greater_equal}
    if a.kind == "c" and b.kind == "c":
        return bool(ops[c.op](a.v, b.v))
    x, y, _ = _unify(a, b, env.rows)
    out: Array = ops[c.op](x, y)
    return out


def _guarded(guard: tuple[Cmp, Expr], body: Expr, env: Env) -> Val:
    """`if cond: return early` then `return body`, as the compiler merges the two paths:
    a folded condition returns one value exactly, and so does one constant on both paths;
    otherwise both become one device value (`i32` for two constants, the device operand's
    type else; two device values of
    different widths do not compile, CT3015)."""
    cond, early = guard
    t = test(cond, env)
    if isinstance(t, bool):
        return evaluate(early if t else body, env)
    a, b = evaluate(early, env), evaluate(body, env)
    if a.kind == "c" and b.kind == "c" and a.v == b.v:
        return a  # one number on both paths stays a compile-time one (`same_constant`)
    kinds = {v.kind for v in (a, b)} - {"c"}
    if len(kinds) > 1:
        raise ModelCompileError("a device function returns i32 and i64 values")
    kind = kinds.pop() if kinds else "i32"
    x, y = _dev(a, kind, env.rows), _dev(b, kind, env.rows)
    return Val(np.where(t, x, y), kind)


def merge(cond: Cmp, a: Expr, b: Expr, env: Env) -> Val:
    """`a if cond else b` (or the same through an `if`): merged as a device function's two
    returns are."""
    return _guarded((cond, a), b, env)


def cdiv(a: Val, b: Val, env: Env) -> Val:
    if a.kind == "c" and b.kind == "c":
        assert isinstance(a.v, int) and isinstance(b.v, int)
        return Val(-(-a.v // (b.v or 1)), "c")
    # as the lowering computes it: a // b + (a % b != 0), which cannot wrap
    q, r = binop("//", a, b, env), binop("%", a, b, env)
    x, y, kind = _unify(q, r, env.rows)
    return Val(wrap_kind(x + (y != 0), kind), kind)


def minmax(fn: str, a: Val, b: Val, env: Env) -> Val:
    if a.kind == "c" and b.kind == "c":
        assert isinstance(a.v, int) and isinstance(b.v, int)
        return Val(min(a.v, b.v) if fn == "min" else max(a.v, b.v), "c")
    x, y, kind = _unify(a, b, env.rows)
    return Val(np.minimum(x, y) if fn == "min" else np.maximum(x, y), kind)


def as_index(v: Val, rows: int) -> Array:
    """A tile index as the device sees it: converted to i32 (an `i64` is truncated), then
    read as unsigned by the view ops, so a negative index is far out of bounds."""
    if v.kind == "c":
        assert isinstance(v.v, int)
        if v.v < 0:
            raise ModelCompileError("negative constant tile index")  # CT3037
        if v.v >= 1 << 31:
            raise ModelCompileError(f"the constant index {v.v} does not fit i32")  # CT3052
        return np.full(rows, v.v, dtype=np.int64)
    assert isinstance(v.v, np.ndarray)
    return wrap_arr(v.v, 32) % np.int64(1 << 32)


def index_fn(e: Expr) -> Callable[[Env], Array]:
    def run(env: Env) -> Array:
        return as_index(evaluate(e, env), env.rows)

    return run
