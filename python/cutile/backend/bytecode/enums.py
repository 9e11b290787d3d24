"""Enum attributes: textual spelling (as in the IR and `tileirdisasm`) -> wire byte.

Values are the `CudaTileI32EnumAttrCase` numbers of `AttrDefs.td`; an enum attribute is
one byte on the wire.
"""

from __future__ import annotations

ROUNDING_MODE = {
    "nearest_even": 0,
    "zero": 1,
    "negative_inf": 2,
    "positive_inf": 3,
    "approx": 4,
    "full": 5,
    "nearest_int_to_zero": 6,
}
COMPARISON_PREDICATE = {
    "equal": 0,
    "not_equal": 1,
    "less_than": 2,
    "less_than_or_equal": 3,
    "greater_than": 4,
    "greater_than_or_equal": 5,
}
COMPARISON_ORDERING = {"unordered": 0, "ordered": 1}
SIGNEDNESS = {"unsigned": 0, "signed": 1}
# The textual form spells these out; the short names are accepted as aliases.
INTEGER_OVERFLOW = {
    "none": 0,
    "no_signed_wrap": 1,
    "nsw": 1,
    "no_unsigned_wrap": 2,
    "nuw": 2,
    "no_wrap": 3,
    "nw": 3,
}
MEMORY_ORDERING = {"weak": 0, "relaxed": 1, "acquire": 2, "release": 3, "acq_rel": 4}
MEMORY_SCOPE = {"tl_blk": 0, "device": 1, "sys": 2}
ATOMIC_RMW_MODE = {
    "and": 0,
    "or": 1,
    "xor": 2,
    "add": 3,
    "addf": 4,
    "max": 5,
    "min": 6,
    "umax": 7,
    "umin": 8,
    "xchg": 9,
}

# Which table an attribute name (as the IR spells it) uses.
BY_ATTRIBUTE: dict[str, dict[str, int]] = {
    "rounding_mode": ROUNDING_MODE,
    "rounding": ROUNDING_MODE,
    "comparison_predicate": COMPARISON_PREDICATE,
    "comparison_ordering": COMPARISON_ORDERING,
    "signedness": SIGNEDNESS,
    "signedness_lhs": SIGNEDNESS,
    "signedness_rhs": SIGNEDNESS,
    "overflow": INTEGER_OVERFLOW,
    "memory_ordering_semantics": MEMORY_ORDERING,
    "memory_scope": MEMORY_SCOPE,
    "mode": ATOMIC_RMW_MODE,
}


def code(attr: str, spelling: str) -> int:
    table = BY_ATTRIBUTE[attr]
    try:
        return table[spelling]
    except KeyError:
        allowed = ", ".join(sorted(table))
        raise ValueError(f"`{attr}` cannot be `{spelling}` (one of: {allowed})") from None
