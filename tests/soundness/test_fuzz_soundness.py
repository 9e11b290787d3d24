"""The differential soundness fuzzer in CI: a fixed seed, a time budget.

`CUTILE_FUZZ_SECONDS` (default 90) is the budget for this file: most of it goes to
`test_generated_kernels_are_sound`, which generates kernels with Hypothesis, checks them,
judges every sampled launch by brute force and launches accepted ones on the interpreter.
It fails on any unsound acceptance or untyped error, with the shrunk kernel's files, its
launches and the report. `CUTILE_FUZZ_SEED` picks another seed. The model tests below
keep the fuzzer's own reading of the language honest.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Verbosity, given, seed, settings
from hypothesis import strategies as st

from .brute import truth
from .draw import Draw, HypothesisSource
from .generate import generate
from .model import (
    Bin,
    Cmp,
    ConstRef,
    Env,
    Grid,
    IntOf,
    Lit,
    ModelCompileError,
    NumTiles,
    ScalarRef,
    Var,
    evaluate,
)
from .oracle import Loader, report, run_case
from .program import (
    Assign,
    ChooseTensor,
    InParam,
    ItemDef,
    Kernel,
    Launch,
    OutParam,
    Persist,
    Store,
    ValueDef,
    render_kernel,
)

BUDGET = float(os.environ.get("CUTILE_FUZZ_SECONDS", "90"))
SEED = int(os.environ.get("CUTILE_FUZZ_SEED", "20261201"))
# Kernels per second through Hypothesis on one core here (~80); the budget's deadline
# stops generation early on a slower machine, this keeps Hypothesis from idling past it.
RATE = 70
FAIL = {"unsound", "race", "oob", "oob-ragged-subtile", "div-zero", "fault", "untyped",
        "internal", "mismatch"}


class _Budget:
    """Generation stops when the budget is spent. After the first failure Hypothesis
    shrinks it, for at most a third of the budget more; a kernel that failed once fails
    again from memory (so a shrink cut short is not reported as flaky)."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.failures: dict[str, str] = {}
        self.examples = 0

    def spent(self) -> bool:
        return time.monotonic() > self.deadline

    def failed(self, key: str, message: str) -> None:
        if not self.failures:
            self.deadline = max(self.deadline, time.monotonic() + BUDGET / 3)
        self.failures[key] = message


_budget = _Budget(BUDGET * 0.9)
_loader = Loader(Path(tempfile.mkdtemp(prefix="cutile-fuzz-ci-")))


@seed(SEED)
@settings(max_examples=max(50, int(BUDGET * RATE)), deadline=None, database=None, derandomize=False,
          suppress_health_check=list(HealthCheck), print_blob=False,
          verbosity=Verbosity.quiet)
@given(st.data())
def test_generated_kernels_are_sound(data: st.DataObject) -> None:
    _budget.examples += 1
    k = generate(Draw(HypothesisSource(data)), "ci")
    key = repr((render_kernel(k), k.launches))
    if key in _budget.failures:
        _fail(_budget.failures[key])
    if _budget.spent():
        return
    out = run_case(k, _loader)
    bad = [f for f in out.findings if f.kind in FAIL]
    if bad:
        message = f"{bad[0].kind}: {bad[0].message}\n\n{report(k, out)}"
        _budget.failed(key, message)
        _fail(message)


def _fail(message: str) -> None:
    # One raise site: Hypothesis tells bugs apart by where they are raised, and a replayed
    # failure must look like the first one.
    raise AssertionError(message)


# -- the model itself ----------------------------------------------------------------------


def _env(grid: tuple[int, int, int], rows: int | None = None) -> Env:
    n = grid[0] * grid[1] * grid[2]
    b = np.arange(n, dtype=np.int64)
    return Env(rows or n, grid, (b % grid[0], (b // grid[0]) % grid[1], b // (grid[0] * grid[1])),
               {}, {}, {"z": (4 * grid[0],)}, {"z": (None,)}, {"z": (4,)})


def test_model_wraps_runtime_products_but_folds_constants() -> None:
    b = Grid("block_id", 0)
    v = evaluate(Bin("//", Bin("*", b, Lit(2**30)), Lit(2**30)), _env((4, 1, 1)))
    assert list(v.v) == [0, 1, -2, -1]  # type: ignore[arg-type]
    c = evaluate(Bin("//", Bin("*", Lit(3), Lit(2**30)), Lit(2**30)), _env((4, 1, 1)))
    assert c.kind == "c" and c.v == 3


def test_model_floor_division_and_modulo_follow_python() -> None:
    b = Grid("block_id", 0)
    v = evaluate(Bin("%", Bin("-", b, Lit(2)), Lit(3)), _env((4, 1, 1)))
    assert list(v.v) == [1, 2, 0, 1]  # type: ignore[arg-type]
    w = evaluate(Bin("//", Bin("-", b, Lit(2)), Lit(3)), _env((4, 1, 1)))
    assert list(w.v) == [-1, -1, 0, 0]  # type: ignore[arg-type]


def _one_store(index: tuple[object, ...] | None, persistent: bool = False) -> Kernel:
    body: list[object] = [Assign(("lin",), (Grid("block_id", 0),)), ValueDef("val", (4,))]
    if persistent:
        body.append(Persist("z", "idx", [Store("z", None, minted="idx")]))
    else:
        body.append(Store("z", index))  # type: ignore[arg-type]
    return Kernel("t", [OutParam("z", 1, (4,))], [], [], [], body, [])  # type: ignore[arg-type]


def _launch(n: int, persistent: int | None = None) -> Launch:
    return Launch({"z": (n,)}, {"z": (4,)}, {}, {}, {}, persistent)


def test_brute_force_tells_permutations_from_collisions() -> None:
    b = Grid("block_id", 0)
    reverse = _one_store((Bin("-", Bin("-", NumTiles("z", 0), Lit(1)), b),))
    assert truth(reverse, _launch(30), set()).safe
    half = _one_store((Bin("//", b, Lit(2)),))
    assert truth(half, _launch(32), set()).reason == "race-ww"
    wrap = _one_store((Bin("//", Bin("*", b, Lit(2**30)), Lit(2**30)),))
    assert truth(wrap, _launch(8), set()).safe
    assert truth(wrap, _launch(12), set()).reason == "oob-store"


def test_brute_force_follows_the_launcher_grid_of_persistent_kernels() -> None:
    k = _one_store(None, persistent=True)
    assert truth(k, _launch(40, 3), {"z"}).safe  # 3 blocks share 10 tiles
    assert truth(k, _launch(40, 30), {"z"}).safe  # more blocks than tiles
    v = truth(k, _launch(40, 3), set())  # not recognized: one block per tile
    assert v.safe and v.grid == (10, 1, 1)


def test_generator_is_deterministic_per_seed() -> None:
    from .draw import RandomSource
    from .program import render_kernel

    a = render_kernel(generate(Draw(RandomSource(7)), "same"))
    b = render_kernel(generate(Draw(RandomSource(7)), "same"))
    assert a == b


def test_the_interpreter_output_is_compared_with_the_model() -> None:
    """A reversed store runs clean and matches the model; a model that predicts other
    writers makes the same run a `mismatch` (so the comparison is live)."""
    import pytest

    from . import brute

    b = Grid("block_id", 0)
    k = _one_store((Bin("-", Bin("-", NumTiles("z", 0), Lit(1)), b),))
    k.case_id = "mm"
    k.launches = [_launch(16), _launch(16), _launch(16)]
    out = run_case(k, _loader)
    assert out.status == "accepted" and out.launched == "ran", report(k, out)
    assert not out.findings, report(k, out)
    mp = pytest.MonkeyPatch()
    mp.setattr(brute, "paint", lambda ev, shape: np.ones(shape, dtype=np.int64))
    try:
        k.case_id = "mm2"
        out = run_case(k, _loader)
    finally:
        mp.undo()
    assert [f.kind for f in out.findings] == ["mismatch"], report(k, out)


# -- narrow integers and tensors chosen by a test (narrow.py, choice.py) -------------------


def test_model_computes_narrow_and_unsigned_values_in_their_type() -> None:
    b = Grid("block_id", 0)
    env = _env((4, 1, 1))
    env.scalars = {"u": ("u8", 7), "s": ("i8", 5), "w": ("u32", 9), "l": ("i64", 2**32 - 5)}
    u, s, w, sl = ScalarRef("u"), ScalarRef("s"), ScalarRef("w"), ScalarRef("l")
    cancel = evaluate(Bin("-", Bin("+", Bin("+", u, Lit(200)), Lit(100)), u), env)
    assert cancel.kind == "u8" and list(cancel.v) == [44] * 4  # type: ignore[arg-type]
    fold = evaluate(Bin("+", Bin("+", Bin("*", s, Lit(0)), Lit(100)), Lit(100)), env)
    assert fold.kind == "i8" and list(fold.v) == [-56] * 4  # type: ignore[arg-type]
    diff = evaluate(Bin("-", Bin("-", w, Lit(1)), w), env)
    assert diff.kind == "u32" and list(diff.v) == [2**32 - 1] * 4  # type: ignore[arg-type]
    assert evaluate(Bin("+", u, s), env).kind == "i16"  # u8 + i8: the type holding both
    assert evaluate(Bin("+", w, b), env).kind == "i64"  # u32 + i32
    assert list(evaluate(IntOf(sl), env).v) == [-5] * 4  # type: ignore[arg-type]
    with pytest.raises(ModelCompileError):  # a Python int must fit the u8 (CT3052)
        evaluate(Bin("+", u, Lit(300)), env)


def test_brute_force_reads_item_values_and_follows_the_chosen_tensor() -> None:
    b = Grid("block_id", 0)
    w = Var("w")
    shift = Bin("-", Bin("+", b, Bin("-", Bin("+", Bin("+", w, Lit(200)), Lit(100)), w)),
                Lit(300))
    body = [Assign(("lin",), (b,)), ValueDef("val", (4,)), ItemDef("w", "y", 0),
            Store("z", (shift,))]
    k = Kernel("t", [OutParam("z", 1, (4,))], [InParam("y", 1, (-1,), "u8")], [], [],
               body, [])
    ln = Launch({"z": (32,), "y": (1,)}, {"z": (4,)}, {}, {}, {}, data={"y": [255]})
    assert truth(k, ln, set()).reason == "oob-store"  # 44 - 300: every block below 0
    reverse = (Bin("-", Bin("-", NumTiles("z", 0), Lit(1)), b),)
    for c, reason in ((1, "race-ww"), (0, "")):  # `w` is `o2` only where C == 1
        pick = ChooseTensor("w", Cmp("==", ConstRef("C"), Lit(1)), "o2", "z")
        body = [Assign(("lin",), (b,)), ValueDef("val", (4,)), Store("o2", reverse), pick,
                Store("w", None)]
        k = Kernel("t", [OutParam("z", 1, (4,)), OutParam("o2", 1, (4,))], [], [], ["C"],
                   body, [])
        ln = Launch({"z": (16,), "o2": (16,)}, {"z": (4,), "o2": (4,)}, {"C": c}, {"C": c}, {})
        assert truth(k, ln, set()).reason == reason
