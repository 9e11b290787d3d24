"""`pdl_trigger_first` (docs/pdl.md): a PDL kernel whose launch of dependents is its first
op, before its wait, so that the next kernel's loads ahead of its own wait may overlap
this kernel's predecessor. The wait still orders every memory access (the prologue check
and an independent dataflow agree), the option is part of the kernel's identity, and
chains of such kernels compute what plain ones do."""

from __future__ import annotations

import copy
import re

import numpy as np
import pdl_kernels as pk
import pytest
from test_pdl import scale_add, unordered_memory_ops

import cutile
from cutile.errors import ConfigError
from cutile.ir import Function
from cutile.lowering.pdl import ordering_problems

rng = np.random.default_rng(11)


def _fn(kernel: cutile.EntryKernel, **consts: int) -> Function:
    return kernel.lowered(kernel.specialization(consts)).module.functions[0]


def test_the_trigger_comes_first_and_the_wait_still_orders_every_access() -> None:
    fn = _fn(scale_add.with_hints(pdl_trigger_first=True), B=128)
    first, wait = fn.body.ops[0], fn.body.ops[1]
    assert (first.name, first.operands) == ("gdc_launch_dependents_tko", [])
    assert wait.name == "gdc_wait_tko"
    assert [op.name for op in fn.walk()].count("gdc_launch_dependents_tko") == 1
    assert ordering_problems(fn) == []
    assert unordered_memory_ops(fn) == []
    plain = _fn(scale_add, B=128)          # the default: the trigger right after the wait
    assert [op.name for op in plain.body.ops[:2]] == ["gdc_wait_tko",
                                                      "gdc_launch_dependents_tko"]


def test_early_loads_stay_between_the_trigger_and_the_wait() -> None:
    from test_pdl_early import CONSTS, early_views, matvec

    low = matvec.with_hints(pdl_trigger_first=True)
    low = low.lowered(low.specialization(CONSTS))
    fn = low.module.functions[0]
    names = [op.name for op in fn.body.ops]
    at = names.index("gdc_wait_tko")
    assert low.pdl_early == ("w",)
    assert names[0] == "gdc_launch_dependents_tko"
    assert "load_view_tko" in names[1:at]
    assert "gdc_launch_dependents_tko" not in names[at:]
    assert ordering_problems(fn, early_views(fn)) == []
    # the check does not take a trigger later than first for one
    moved = copy.deepcopy(fn)
    moved.body.ops.insert(at, moved.body.ops.pop(0))
    assert ordering_problems(moved, early_views(moved)) != []


def test_a_trigger_whose_token_is_used_is_refused() -> None:
    fn = _fn(scale_add.with_hints(pdl_trigger_first=True), B=128)
    load = next(op for op in fn.walk() if op.name == "load_view_tko")
    load.operands[-1] = fn.body.ops[0].result      # ordered by the trigger, not the wait
    assert any("ahead of the wait" in p for p in ordering_problems(fn))
    assert unordered_memory_ops(fn) != []


def test_the_option_is_part_of_the_identity_and_checked() -> None:
    spec = scale_add.specialization({"B": 128})
    first = scale_add.with_hints(pdl_trigger_first=True)
    assert first.identity(spec)["pdl_trigger_first"] is True
    assert "pdl_trigger_first" not in scale_add.identity(spec)
    assert "pdl_trigger_first" not in first.with_hints(pdl=False).identity(spec)
    with pytest.raises(ConfigError, match="pdl_trigger_first"):
        scale_add.with_hints(pdl_trigger_first="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("first_every", [1, 2, 3])
def test_a_chain_with_early_triggers_matches_numpy(first_every: int) -> None:
    a0 = rng.random(pk.B * 8, dtype=np.float32)
    y0 = rng.random(pk.B * 8, dtype=np.float32)
    got = pk.run_chain(a0, y0, 9, 4, first_every)
    want = pk.reference(a0, y0, 9)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.tileiras
def test_sass_has_the_trigger_before_the_wait() -> None:
    """PREEXIT (launch_dependents) before ACQBULK (the wait), and the wait before the
    first global access."""
    from cutile.dump import sass

    text = sass(scale_add.with_hints(pdl_trigger_first=True)
                .compile(target="sm_90", B=128).cubin)
    if text is None:
        pytest.skip("cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    lines = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
    trig = next(i for i, ln in enumerate(lines) if re.search(r"\bPREEXIT\b", ln))
    wait = next(i for i, ln in enumerate(lines) if re.search(r"\bACQBULK\b", ln))
    first_access = next(i for i, ln in enumerate(lines)
                        if re.search(r"\b(LDG|STG|UTMALDG|UTMASTG)\b", ln))
    assert trig < wait < first_access
