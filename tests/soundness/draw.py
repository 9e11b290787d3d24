"""Where the generator's random choices come from: `random.Random` for long campaigns
(fast), or a Hypothesis `data` object for the CI test (seeded, and it shrinks a failing
kernel to a small one). Every choice is an integer in a range whose low end is the simplest
option, so that Hypothesis shrinks towards plain kernels."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Source(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...


class RandomSource:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class HypothesisSource:
    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data = data
        self.st = st
        self._cache: dict[tuple[int, int], Any] = {}

    def integer(self, lo: int, hi: int) -> int:
        s = self._cache.get((lo, hi))
        if s is None:
            s = self._cache[(lo, hi)] = self.st.integers(lo, hi)
        return int(self.data.draw(s))


class Draw:
    """Typed helpers over a `Source`."""

    def __init__(self, source: Source) -> None:
        self.src = source

    def between(self, lo: int, hi: int) -> int:
        return self.src.integer(lo, hi)

    def chance(self, p: float) -> bool:
        """True with probability `p`; shrinks to False."""
        return self.src.integer(0, 999) >= 1000 - int(p * 1000)

    def pick(self, options: Sequence[T]) -> T:
        """One of `options`, uniformly; shrinks to the first."""
        return options[self.src.integer(0, len(options) - 1)]

    def weighted(self, options: Sequence[tuple[T, int]]) -> T:
        """One of `options` by integer weight; shrinks to the first."""
        total = sum(w for _, w in options)
        r = self.src.integer(0, total - 1)
        for v, w in options:
            if r < w:
                return v
            r -= w
        return options[-1][0]
