"""Bugs planted in the pipeline are found by the fuzzer within its CI budget.

A campaign that finds nothing proves little unless it would find a real bug. Each plant
below breaks, in this process only, one fact the compiler takes from the checker: the
width of a loop counter, the device asserts of the accesses the checker could not prove,
the persistent schedule of an `iter_indices()` walk (its stride, its swizzle).
The fuzzer's generator and oracle, on a fixed seed, must then report an accepted kernel
that does something unsafe on the interpreter within a few hundred kernels, and the same
kernel must run clean without the plant (so the finding is the plant's, not a real hole).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cutile import dtypes as dt
from cutile.ir import Value, scalar
from cutile.lowering.facts import ScheduleFact
from cutile.lowering.lower import Lowerer
from cutile.lowering.schedule import Schedule
from cutile.lowering.signature import Specialization
from cutile.lowering.values import MappedRangeV

from .campaign import UNSOUND, case_seed
from .draw import Draw, RandomSource
from .generate import generate
from .oracle import Loader, report, run_case
from .program import Kernel

SEED = 20261207
# Kernels generated per plant at most, and seconds: far above what each plant needs on
# this seed, far below the fuzzer's own CI budget.
MAX_KERNELS = 4000
MAX_SECONDS = 60.0


def _counters_in_32_bits(mp: pytest.MonkeyPatch) -> None:
    # The lowering before the counter width was the checker's fact counted every loop in
    # 32 bits; one near 2^31 wraps below its bound on the GPU and the loop goes on.
    mp.setattr(Lowerer, "loop_counter_bits", lambda self, span, unit: 32)


def _no_device_asserts(mp: pytest.MonkeyPatch) -> None:
    # Accesses the checker left to a device assert, emitted without it.
    mp.setattr(Lowerer, "needs_device_check", lambda self: False)


def _unit_last_stride(mp: pytest.MonkeyPatch) -> None:
    # Every tensor specialized as if its last stride were 1 (the fast path of row-major
    # tensors): a view's stores and loads then leave its elements. Only launches whose
    # arguments are views (a transposed buffer, every other element) can show it.
    spec_tensor = Specialization.tensor
    mp.setattr(Specialization, "tensor", lambda self, name: dataclasses.replace(
        spec_tensor(self, name), last_stride_one=True))


def _schedule_stride_one(mp: pytest.MonkeyPatch) -> None:
    # A persistent walk that strides by 1 instead of the block count: every block walks
    # every tile from its own on, so blocks store one tile each.
    mapped_bounds = Schedule.mapped_bounds

    def strided(self: Schedule, it: MappedRangeV, fact: ScheduleFact) -> tuple[Value, ...]:
        lo, hi, _ = mapped_bounds(self, it, fact)
        return lo, hi, self.b.constant(1, scalar(dt.i32))

    mp.setattr(Schedule, "mapped_bounds", strided)


def _swizzle_by_whole_groups(mp: pytest.MonkeyPatch) -> None:
    # The grouped swizzle with the group size where the last group is smaller (`pid % g`,
    # `pid // g` for `% size`, `// size`): not a bijection where the rows are not a
    # multiple of the group, so a tile is stored twice, or outside the partition.
    def tile_of(self: Schedule, flat: Value, it: MappedRangeV, fact: ScheduleFact
                ) -> list[Value]:
        b = self.b
        counts = self.tile_counts(it)
        if len(counts) == 1:
            return [flat]

        def op(name: str, x: Value, y: Value) -> Value:
            attrs = {"signedness": "signed", "rounding": "zero"} if name == "divi" else \
                {"signedness": "signed"}
            return b.op(name, [x, y], [x.type], attrs).result

        m, n = counts[-2], counts[-1]
        pid = flat if len(counts) == 2 else op("remi", flat, b.binary("muli", m, n))
        g = op("mini", b.constant(it.group, scalar(dt.i32)), m)
        per = b.binary("muli", g, n)
        first = b.binary("muli", op("divi", pid, per), g)
        local = op("remi", pid, per)
        ij = [b.binary("addi", first, op("remi", local, g)), op("divi", local, g)]
        return ij if len(counts) == 2 else [op("divi", flat, b.binary("muli", m, n)), *ij]

    mp.setattr(Schedule, "tile_of", tile_of)


PLANTS: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], Callable[[Kernel], bool]]] = {
    "32-bit loop counters": (_counters_in_32_bits, lambda k: "loop-top" in k.features),
    "no device asserts": (_no_device_asserts, lambda k: True),
    "unit last stride": (_unit_last_stride, lambda k: True),
    "schedule strides by 1": (_schedule_stride_one, lambda k: "persistent" in k.features),
    "swizzle by whole groups": (_swizzle_by_whole_groups,
                                lambda k: "persistent" in k.features and k.outs[0].rank > 1),
}


def _unsafe(k: Kernel, loader: Loader) -> tuple[bool, str]:
    out = run_case(k, loader)
    bad = [f for f in out.findings if f.kind in UNSOUND]
    return bool(bad), report(k, out)


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_the_fuzzer_finds_a_planted_bug(plant: str) -> None:
    breaks, relevant = PLANTS[plant]
    loader = Loader(Path(tempfile.mkdtemp(prefix="cutile-planted-")))
    deadline = time.monotonic() + MAX_SECONDS
    found: tuple[int, str] | None = None
    tried = 0
    for i in range(MAX_KERNELS):
        if time.monotonic() > deadline:
            break
        k = generate(Draw(RandomSource(case_seed(SEED, i))), f"p{i}")
        if not relevant(k):
            continue
        tried += 1
        with pytest.MonkeyPatch.context() as mp:
            breaks(mp)
            unsafe, text = _unsafe(k, loader)
        if unsafe:
            found = (i, text)
            break
    assert found is not None, f"{plant}: no unsafe kernel in {tried} relevant kernels"
    i, text = found
    print(f"{plant}: found at case {i}, {tried} relevant kernels")
    again = generate(Draw(RandomSource(case_seed(SEED, i))), f"p{i}again")
    unsafe, clean = _unsafe(again, loader)
    assert not unsafe, f"case {i} is unsafe without the plant too:\n{clean}\n\n{text}"


def test_a_plant_breaks_only_this_test() -> None:
    # (the monkeypatches are undone: the real lowering keeps the checker's facts)
    assert Lowerer.loop_counter_bits.__name__ == "loop_counter_bits"
    assert Lowerer.needs_device_check.__name__ == "needs_device_check"
    assert Schedule.mapped_bounds.__name__ == "mapped_bounds"
    assert Schedule.tile_of.__name__ == "tile_of"

