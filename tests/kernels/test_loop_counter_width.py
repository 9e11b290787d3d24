"""The width of a `for` loop's counter is the checker's fact, not the lowering's guess.

Tile IR steps a `for` counter in its own width, and on the H200 a 32-bit counter that
passes 2^31 - 1 wraps below the bound and the loop goes on (test_loop_step.py). The checker
assumes the loop variable stays in `[start, stop)`, so it decides the width that makes that
true: 32 bits where it proves the last value plus the step stays at most 2^31 - 1 (a step
of 1 always), else 64. The lowering steps each loop in the width the checker gave and
refuses a loop the checker never read (CT9002)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api, pipeline
from cutile.core import Const, Mut, Tensor, full, i32
from cutile.errors import CutileError
from cutile.ir import print_module
from cutile.lowering.facts import LoweringFacts

SRC = """
import cutile
from cutile.core import Mut, Tensor, i32, full, block_id

@cutile.entry
def k(z: Mut[Tensor[i32, [16]]], x: Tensor[i32, [-1]], n: i32):
    c = 0
    for j in {it}:
        c += 1
    z.store(full((16,), c, i32))
"""


@pytest.mark.parametrize(("it", "bits"), [
    ("range(n)", 32),                      # a step of 1 never passes a 32-bit stop
    ("range(3, n, 1)", 32),
    ("range(0, 1000, 4)", 32),             # 999 + 4 fits
    ("range(0, 2**31 - 4, 4)", 32),        # the last value 2^31 - 8, plus 4: fits
    ("range(0, 2**31 - 2, 4)", 64),        # 2^31 - 4 + 4 = 2^31 does not
    ("range(0, n, 2)", 64),                # n may be 2^31 - 1
    ("range(0, x.shape[0], 8)", 64),
    ("range(0, block_id(0), 2)", 64),
])
def test_the_checker_gives_each_loop_its_counter_width(tmp_path: Any, it: str, bits: int
                                                       ) -> None:
    k = load_kernel(tmp_path, SRC.format(it=it))
    assert [b for _, _, b in k.check().loop_counters] == [bits]
    text = print_module(k.lowered(k.specialization({})).module)
    counters = re.findall(r"= for %\d+ in \(.*?\) : tile<(i\d+)>", text)
    assert counters == [f"i{bits}"]


@pytest.mark.parametrize(("it", "expected"), [
    ("range(0, n, 2)", len(range(0, 37, 2))),             # 64 bits
    ("range(0, 1000, 3)", len(range(0, 1000, 3))),        # 32 bits
])
def test_either_width_counts_the_same_iterations(tmp_path: Any, interpreter: None,
                                                 it: str, expected: int) -> None:
    k = load_kernel(tmp_path, SRC.format(it=it))
    z = api.zeros([16], i32).partition([16])
    x = api.from_numpy(np.arange(5, dtype=np.int32))
    out = k(z, x, 37).sync()[0].unpartition().to_numpy()
    assert (out == expected).all()


@cutile.device
def _count_to(n: i32, s: Const[int]) -> i32:
    c = 0
    for _j in range(0, n, s):
        c += 1
    return c


@cutile.entry
def counts_twice(z: Mut[Tensor[i32, [16]]], n: i32):
    z.store(full((16,), _count_to(n, 1) * 100 + _count_to(n, 3), i32))


def test_each_inlined_call_has_its_own_counter(interpreter: None) -> None:
    # one loop node, two call sites: a step of 1 in one, 3 in the other
    counters = sorted((tuple(p), nid, b) for p, nid, b in counts_twice.check().loop_counters)
    assert len({nid for _, nid, _ in counters}) == 1
    assert sorted(b for _, _, b in counters) == [32, 64]
    assert len({p for p, _, _ in counters}) == 2
    z = counts_twice(api.zeros([16], i32).partition([16]), 10).sync()[0]
    assert (z.unpartition().to_numpy() == 10 * 100 + 4).all()


def test_a_loop_the_checker_did_not_read_is_refused(tmp_path: Any) -> None:
    k = load_kernel(tmp_path, SRC.format(it="range(0, n, 2)"))
    facts = dataclasses.replace(LoweringFacts.of(k.check()), loop_counters={})
    with pytest.raises(CutileError) as info:
        pipeline.lower(k.document(), k.specialization({}), facts)
    assert info.value.code == "CT9002"
    assert "the checker has no fact for this loop" in str(info.value)
