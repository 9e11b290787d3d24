"""Bugs planted in the pipeline are found by the fuzzer within its CI budget.

A campaign that finds nothing proves little unless it would find a real bug. Each plant
below breaks, in this process only, one fact the compiler takes from the checker: the
width of a loop counter, the device asserts of the accesses the checker could not prove.
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

from cutile.lowering.lower import Lowerer
from cutile.lowering.signature import Specialization

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


PLANTS: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], Callable[[Kernel], bool]]] = {
    "32-bit loop counters": (_counters_in_32_bits, lambda k: "loop-top" in k.features),
    "no device asserts": (_no_device_asserts, lambda k: True),
    "unit last stride": (_unit_last_stride, lambda k: True),
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

