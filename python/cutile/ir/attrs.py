"""Attribute values that ops carry besides plain ints, strings and bools."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class DivBy:
    """`div_by<divisor[, every E along A]>`: the value (or every E-th element along A)
    is a multiple of `divisor`."""

    divisor: int
    every: int | None = None
    along: int | None = None


@dataclass(frozen=True)
class Bounded:
    """`bounded<lb, ub>`; None is an open end (`?`)."""

    lb: int | None
    ub: int | None


@dataclass(frozen=True)
class SameElements:
    """`same_elements<[...]>`: every chunk of this shape holds one value."""

    shape: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Dense:
    """Constant data for `constant`: a numpy array of the result's element type, either of the
    result's full shape or of size 1 (a splat)."""

    array: np.ndarray = field(repr=False)

    @property
    def is_splat(self) -> bool:
        return bool(self.array.size == 1)

    def __repr__(self) -> str:
        if self.is_splat:
            return f"Dense({self.array.reshape(-1)[0]!r})"
        return f"Dense(shape={self.array.shape})"


@dataclass(frozen=True)
class OptimizationHints:
    """Per-architecture hints, e.g. {"sm_90": {"num_worker_warps_per_cta": 2}}."""

    by_arch: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]

    @staticmethod
    def of(hints: dict[str, dict[str, int]]) -> OptimizationHints:
        return OptimizationHints(
            tuple((arch, tuple(sorted(kv.items()))) for arch, kv in sorted(hints.items()))
        )


AssumePredicate = DivBy | Bounded | SameElements
