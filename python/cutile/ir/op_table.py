"""Every Tile IR op cutile emits, described once: its name, its bytecode opcode
(`BytecodeOpcodes.td`), the bytecode version that introduced it, how many operands and
results it takes, the attributes it may carry, and whether it is pure.

The other readers of an op take their facts from here or are checked against it
(`tests/ir/test_op_table.py`): the bytecode encoder registers by name and takes the opcode
and version from this table (`backend/bytecode/opwriter.encodes`); the verifier refuses an
op that is not here, a count of operands or results outside the range, and an attribute
the op does not have (a misspelt attribute would otherwise be dropped by the encoder
without a word); `reduce` and `scan` bodies must be pure by this table; and the printer,
the verifier's per-op rules and the interpreter must cover every op in it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpDef:
    name: str
    opcode: int
    since: str
    # (fewest, most) operands and results; None: any number (variadic, or region-carried)
    operands: tuple[int, int | None]
    results: tuple[int, int | None]
    attrs: frozenset[str]
    pure: bool

    def check_counts(self, operands: int, results: int) -> list[str]:
        out = []
        for what, n, (lo, hi) in (("operands", operands, self.operands),
                                  ("results", results, self.results)):
            if n < lo or (hi is not None and n > hi):
                want = f"{lo}" if hi == lo else f"{lo} or more" if hi is None else f"{lo}-{hi}"
                out.append(f"`{self.name}` takes {want} {what}, got {n}")
        return out


def _op(name: str, opcode: int, since: str, operands: tuple[int, int | None],
        results: tuple[int, int | None], attrs: tuple[str, ...], *, pure: bool) -> OpDef:
    return OpDef(name, opcode, since, operands, results, frozenset(attrs), pure)


OPS: dict[str, OpDef] = {d.name: d for d in (
    _op("absf", 0x00, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("absi", 0x01, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("addf", 0x02, "13.1", (2, 2), (1, 1), ("flush_to_zero", "rounding_mode"), pure=True),
    _op("addi", 0x03, "13.1", (2, 2), (1, 1), ("overflow",), pure=True),
    _op("andi", 0x04, "13.1", (2, 2), (1, 1), (), pure=True),
    _op("assert", 0x05, "13.1", (1, None), (0, None), ("message",), pure=False),
    _op("assume", 0x06, "13.1", (1, 1), (1, 1), ("predicate",), pure=True),
    _op("atan2", 0x6E, "13.2", (2, 2), (1, 1), (), pure=True),
    _op("atomic_cas_tko", 0x07, "13.1", (3, None), (2, None), (
        "has_mask", "has_padding", "has_padding_value", "has_token", "memory_ordering_semantics",
        "memory_scope", "mode", "operandSegmentSizes", "operand_segment_sizes",
    ), pure=False),
    _op("atomic_rmw_tko", 0x08, "13.1", (2, None), (2, None), (
        "has_mask", "has_padding", "has_padding_value", "has_token", "memory_ordering_semantics",
        "memory_scope", "mode", "operandSegmentSizes", "operand_segment_sizes",
    ), pure=False),
    _op("bitcast", 0x09, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("break", 0x0A, "13.1", (0, None), (0, None), (), pure=True),
    _op("broadcast", 0x0B, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("cat", 0x0C, "13.1", (2, None), (1, None), ("dim",), pure=True),
    _op("ceil", 0x0D, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("cmpf", 0x0E, "13.1", (2, 2), (1, 1), (
        "comparison_ordering", "comparison_predicate", "signedness",
    ), pure=True),
    _op("cmpi", 0x0F, "13.1", (2, 2), (1, 1), (
        "comparison_ordering", "comparison_predicate", "signedness",
    ), pure=True),
    _op("constant", 0x10, "13.1", (0, 0), (1, 1), ("value",), pure=True),
    _op("continue", 0x11, "13.1", (0, None), (0, None), (), pure=True),
    _op("cos", 0x12, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("cosh", 0x13, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("divf", 0x14, "13.1", (2, 2), (1, 1), ("flush_to_zero", "rounding_mode"), pure=True),
    _op("divi", 0x15, "13.1", (2, 2), (1, 1), (
        "rounding", "rounding_mode", "signedness",
    ), pure=True),
    _op("exp", 0x17, "13.1", (1, 1), (1, 1), ("rounding_mode",), pure=True),
    _op("exp2", 0x18, "13.1", (1, 1), (1, 1), ("flush_to_zero",), pure=True),
    _op("exti", 0x25, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("extract", 0x26, "13.1", (2, None), (1, None), (), pure=True),
    _op("floor", 0x27, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("fma", 0x28, "13.1", (3, 3), (1, 1), ("flush_to_zero", "rounding_mode"), pure=True),
    _op("for", 0x29, "13.1", (3, None), (0, None), ("unsignedCmp", "unsigned_cmp"), pure=False),
    _op("fpowi", 0x79, "13.4", (2, 2), (1, 1), (), pure=True),
    _op("ftof", 0x2A, "13.1", (1, 1), (1, 1), (
        "overflow", "rounding_mode", "signedness",
    ), pure=True),
    _op("ftoi", 0x2B, "13.1", (1, 1), (1, 1), (
        "overflow", "rounding_mode", "saturating", "signedness",
    ), pure=True),
    # Programmatic dependent launch (griddepcontrol): an optional token in, a token out.
    _op("gdc_launch_dependents_tko", 0x77, "13.4", (0, 1), (1, 1), ("has_token",), pure=False),
    _op("gdc_wait_tko", 0x78, "13.4", (0, 1), (1, 1), ("has_token",), pure=False),
    _op("get_index_space_shape", 0x2D, "13.1", (1, None), (1, None), (), pure=True),
    _op("get_num_tile_blocks", 0x2E, "13.1", (0, None), (3, None), (), pure=True),
    _op("get_tensor_shape", 0x2F, "13.1", (1, None), (2, None), (), pure=True),
    _op("get_tile_block_id", 0x30, "13.1", (0, None), (3, None), (), pure=True),
    _op("if", 0x32, "13.1", (1, None), (0, None), (), pure=False),
    _op("insert", 0x76, "13.4", (4, None), (1, None), (), pure=True),
    _op("int_to_ptr", 0x33, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("iota", 0x3A, "13.1", (0, 0), (1, 1), (), pure=True),
    _op("itof", 0x3B, "13.1", (1, 1), (1, 1), (
        "overflow", "rounding_mode", "signedness",
    ), pure=True),
    _op("join_tokens", 0x3C, "13.1", (2, None), (1, None), (), pure=False),
    _op("load_ptr_tko", 0x3D, "13.1", (1, None), (2, None), (
        "has_mask", "has_padding", "has_padding_value", "has_token", "memory_ordering_semantics",
        "memory_scope", "mode", "operandSegmentSizes", "operand_segment_sizes",
        "optimization_hints",
    ), pure=False),
    _op("load_view_tko", 0x3E, "13.1", (2, None), (2, None), (
        "has_token", "inbounds", "memory_ordering_semantics", "memory_scope",
        "optimization_hints",
    ), pure=False),
    _op("log", 0x3F, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("log2", 0x40, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("loop", 0x41, "13.1", (1, None), (1, None), (), pure=False),
    _op("make_partition_view", 0x42, "13.1", (1, None), (1, None), (), pure=True),
    _op("make_tensor_view", 0x43, "13.1", (1, None), (1, None), ("num_dynamic_shape",), pure=True),
    _op("make_token", 0x44, "13.1", (0, 0), (1, 1), (), pure=False),
    _op("maxf", 0x45, "13.1", (2, 2), (1, 1), ("flush_to_zero", "propagate_nan"), pure=True),
    _op("maxi", 0x46, "13.1", (2, 2), (1, 1), ("signedness",), pure=True),
    _op("minf", 0x47, "13.1", (2, 2), (1, 1), ("flush_to_zero", "propagate_nan"), pure=True),
    _op("mini", 0x48, "13.1", (2, 2), (1, 1), ("signedness",), pure=True),
    _op("mmaf", 0x49, "13.1", (3, 3), (1, 1), (
        "fast_acc", "signedness_lhs", "signedness_rhs",
    ), pure=True),
    _op("mmai", 0x4A, "13.1", (3, 3), (1, 1), ("signedness_lhs", "signedness_rhs"), pure=True),
    _op("mulf", 0x4C, "13.1", (2, 2), (1, 1), ("flush_to_zero", "rounding_mode"), pure=True),
    _op("mulhii", 0x4D, "13.1", (2, 2), (1, 1), (), pure=True),
    _op("muli", 0x4E, "13.1", (2, 2), (1, 1), ("overflow",), pure=True),
    _op("negf", 0x4F, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("negi", 0x50, "13.1", (1, 1), (1, 1), ("overflow",), pure=True),
    _op("offset", 0x51, "13.1", (2, 2), (1, 1), (), pure=True),
    _op("ori", 0x52, "13.1", (2, 2), (1, 1), (), pure=True),
    _op("permute", 0x53, "13.1", (1, 1), (1, 1), ("permutation",), pure=True),
    _op("pow", 0x54, "13.1", (2, 2), (1, 1), (), pure=True),
    _op("print_tko", 0x55, "13.1", (0, None), (1, None), (
        "format", "has_token", "str",
    ), pure=False),
    _op("ptr_to_int", 0x56, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("ptr_to_ptr", 0x57, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("reduce", 0x58, "13.1", (1, None), (1, None), ("dim", "identities", "reverse"), pure=True),
    _op("remf", 0x59, "13.1", (2, 2), (1, 1), (), pure=True),
    _op("remi", 0x5A, "13.1", (2, 2), (1, 1), ("signedness",), pure=True),
    _op("reshape", 0x5B, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("return", 0x5C, "13.1", (0, None), (0, None), (), pure=True),
    _op("rsqrt", 0x5D, "13.1", (1, 1), (1, 1), ("flush_to_zero",), pure=True),
    _op("scan", 0x5E, "13.1", (1, None), (1, None), ("dim", "identities", "reverse"), pure=True),
    _op("select", 0x5F, "13.1", (3, 3), (1, 1), (), pure=True),
    _op("shli", 0x60, "13.1", (2, 2), (1, 1), ("overflow", "signedness"), pure=True),
    _op("shri", 0x61, "13.1", (2, 2), (1, 1), ("signedness",), pure=True),
    _op("sin", 0x62, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("sinh", 0x63, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("sqrt", 0x64, "13.1", (1, 1), (1, 1), ("flush_to_zero", "rounding_mode"), pure=True),
    _op("store_ptr_tko", 0x65, "13.1", (2, None), (1, None), (
        "has_mask", "has_padding", "has_padding_value", "has_token", "memory_ordering_semantics",
        "memory_scope", "mode", "operandSegmentSizes", "operand_segment_sizes",
        "optimization_hints",
    ), pure=False),
    _op("store_view_tko", 0x66, "13.1", (3, None), (1, None), (
        "has_token", "inbounds", "memory_ordering_semantics", "memory_scope",
        "optimization_hints",
    ), pure=False),
    _op("subf", 0x67, "13.1", (2, 2), (1, 1), ("flush_to_zero", "rounding_mode"), pure=True),
    _op("subi", 0x68, "13.1", (2, 2), (1, 1), ("overflow",), pure=True),
    _op("tan", 0x69, "13.1", (1, 1), (1, 1), (), pure=True),
    _op("tanh", 0x6A, "13.1", (1, 1), (1, 1), ("rounding_mode",), pure=True),
    _op("trunci", 0x6B, "13.1", (1, 1), (1, 1), ("overflow", "signedness"), pure=True),
    _op("xori", 0x6C, "13.1", (2, 2), (1, 1), (), pure=True),
    _op("yield", 0x6D, "13.1", (0, None), (0, None), (), pure=True),
)}

IMPURE: frozenset[str] = frozenset(n for n, d in OPS.items() if not d.pure)

# The ops that touch global memory, each token-ordered (its optional token operand is the
# last one, marked by `has_token`). A kernel launched with programmatic dependent launch
# orders every one of them after its `gdc_wait_tko` through that token
# (`lowering/pdl.py`): an op that touches memory and is missing here would escape that
# order, so `tests/ir/test_ir_op_table.py` holds every impure op to this list or the next.
MEMORY_OPS: frozenset[str] = frozenset({
    "load_view_tko", "store_view_tko", "load_ptr_tko", "store_ptr_tko", "atomic_rmw_tko",
    "atomic_cas_tko",
})

# Impure ops that touch no memory: control flow (its memory ops are in its regions),
# token plumbing, the grid-dependency ops themselves, assertions and printing.
NO_MEMORY_IMPURE: frozenset[str] = frozenset({
    "for", "if", "loop", "make_token", "join_tokens", "gdc_launch_dependents_tko",
    "gdc_wait_tko", "assert", "print_tko",
})


def op_def(name: str) -> OpDef | None:
    return OPS.get(name)
