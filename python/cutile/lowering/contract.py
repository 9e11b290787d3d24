"""Floating-point contraction (`@cutile.entry(fp_contract=True)`): a product that only an
add or a subtract uses becomes one fused multiply-add, rounded once.

tileiras keeps Tile IR's `mulf` and `addf` apart (each rounds, as written), where nvcc
(`-fmad=true`) and Triton contract them: a row kernel's `(x - mean) * inv * w + b` costs an
FMUL and an FADD per element on sm_90 instead of one FFMA (benchmarks/norms_triton_sass.py).
The pass runs on the lowered function, after the checker's facts were used: it changes how
values are rounded, never which memory a kernel touches.

A product contracts when its `mulf` has exactly one use, that use is an `addf` or `subf`
in the same block, and both round to nearest even with the same flush-to-zero mode:
- `a * b + c` and `c + a * b` become `fma(a, b, c)`;
- `a * b - c` becomes `fma(a, b, -c)`, and `c - a * b` becomes `fma(-a, b, c)`.
"""

from __future__ import annotations

from collections import Counter

from ..dtypes import DType
from ..ir.builder import Builder
from ..ir.core import Block, Function, Module, Op
from ..ir.types import TileType

CONTRACTIBLE = {"f16", "bf16", "f32", "f64"}


def contract_module(module: Module) -> int:
    """Contract every function of `module` in place; the number of products fused."""
    return sum(contract_function(fn) for fn in module.functions)


def contract_function(fn: Function) -> int:
    uses: Counter[int] = Counter(id(v) for op in fn.walk() for v in op.operands)
    return _contract_block(fn.body, uses)


def _contract_block(block: Block, uses: Counter[int]) -> int:
    fused = 0
    for op in block.ops:
        for region in op.regions:
            fused += _contract_block(region, uses)
    products = {id(op.results[0]): op for op in block.ops
                if op.name == "mulf" and _contractible(op) and uses[id(op.results[0])] == 1}
    out: list[Op] = []
    gone: set[int] = set()
    for op in block.ops:
        replaced = _fuse(op, products, gone) if op.name in ("addf", "subf") else None
        if replaced is None:
            out.append(op)
        else:
            out.extend(replaced)
            fused += 1
    block.ops = [op for op in out if id(op) not in gone]
    return fused


def _fuse(add: Op, products: dict[int, Op], gone: set[int]) -> list[Op] | None:
    """The ops that replace `add` (an `addf` or `subf`) when one operand is a product of
    `products` it can fuse with (its `mulf` then goes: `gone`), else None. They are made
    by the builder in a scratch block, and the `fma` takes over `add`'s result, so every
    later use reads it unchanged."""
    if not _contractible(add):
        return None
    lhs, rhs = add.operands
    for which, value in ((0, lhs), (1, rhs)):
        mul = products.get(id(value))
        if mul is None or id(mul) in gone or mul.attrs != add.attrs:
            continue
        a, b = mul.operands
        other = rhs if which == 0 else lhs
        builder = Builder()
        scratch = Block()
        with builder.at(scratch), builder.location(add.loc):
            if add.name == "subf" and which == 0:        # a * b - c = fma(a, b, -c)
                other = builder.unary("negf", other)
            elif add.name == "subf":                      # c - a * b = fma(-a, b, c)
                a = builder.unary("negf", a)
            builder.fma(a, b, other, **add.attrs)
        scratch.ops[-1].results = add.results
        gone.add(id(mul))
        return scratch.ops
    return None


def _contractible(op: Op) -> bool:
    """A float op on the element types Tile IR's `fma` takes, rounding to nearest even."""
    t = op.results[0].type
    return (isinstance(t, TileType) and isinstance(t.element, DType)
            and t.element.name in CONTRACTIBLE
            and op.attrs.get("rounding_mode", "nearest_even") == "nearest_even")
