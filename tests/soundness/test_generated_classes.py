"""The generator writes the kernels of two classes that were hand-written soundness bugs
first (`worlds.py`): a fuzzer that cannot write a class cannot guard against its return.

Each test reads the kernels a fixed seed generates, as data, and asserts the shape that
made the bug (not a feature name alone), then runs a few through the checker and the
interpreter: some must be accepted and launched, and none may be unsafe.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .campaign import UNSOUND, case_seed, known_class
from .draw import Draw, RandomSource
from .generate import generate
from .model import Bin, ConstRef, DevCall, Expr, ScalarRef, ShapeOf, TensorRef, walk
from .oracle import Loader, report, run_case
from .program import Assign, ChooseTensor, Kernel, Pick, Store

SEED = 20261208
KERNELS = 3000  # generated per test at most (they take about a second)


def kernels(want: Callable[[Kernel], bool]) -> Iterator[Kernel]:
    for i in range(KERNELS):
        k = generate(Draw(RandomSource(case_seed(SEED, i))), f"g{i}")
        if want(k):
            yield k


def calls(e: Expr) -> list[DevCall]:
    return [n for n in walk(e) if isinstance(n, DevCall)]


def extent_test_inputs(c: ChooseTensor | Pick) -> set[str]:
    """The inputs passed whole to a device function that tests their extent, in `c`'s test."""
    out = set()
    for call in calls(c.cond.a) + calls(c.cond.b):
        guard = call.fn.guard
        if guard is None or not any(isinstance(n, ShapeOf) for n in walk(guard[0].a)):
            continue
        out |= {a.name for a in call.args if isinstance(a, TensorRef)}
    return out


def is_two_input_extent_keys(k: Kernel) -> bool:
    """One device function tests the extents of two inputs of static extents; one result
    chooses the output `w` names, the other the index `w` is stored at; and some launch
    gives the two inputs different extents."""
    choose = [s for s in k.body if isinstance(s, ChooseTensor)]
    pick = [s for s in k.body if isinstance(s, Pick)]
    if not choose or not pick:
        return False
    first, second = extent_test_inputs(choose[0]), extent_test_inputs(pick[0])
    fns = {c.fn.name for s in (choose[0], pick[0]) for c in calls(s.cond.a)}
    if len(first) != 1 or len(second) != 1 or first == second or len(fns) != 1:
        return False
    names = first | second
    static = all(x.decl[0] != -1 for x in k.ins if x.name in names)
    differ = any(len({ln.shapes[n] for n in names}) == 2 for ln in k.launches)
    stored = any(isinstance(s, Store) and s.recv == "w" for s in k.body)
    return static and differ and stored


def test_a_fixed_seed_generates_extent_tests_of_two_inputs_choosing_tensor_and_index() -> None:
    found = list(kernels(is_two_input_extent_keys))
    assert len(found) >= 10, len(found)
    assert known_class(sorted(found[0].features), set(), "") == "12-extent-keys"
    assert all("extent-keys" in k.features for k in found)
    # the safe twin, one input tested twice, is written too
    assert any("extent-keys-same-input" in k.features for k in kernels(
        lambda k: "extent-keys" in k.features))


def product_meets(k: Kernel) -> str | None:
    """How a product of two `Const`s meets a device value: "i64" (an `i64` scalar), "dead"
    (in one arm of a test of `Const`s), "i32" (next to a value certainly `i32`)."""
    i64 = {n for n, t in k.scalars if t == "i64"}
    for s in k.body:
        exprs = list(s.values) if isinstance(s, Assign) else \
            [s.a] if isinstance(s, Pick) and isinstance(s.cond.a, ConstRef) else []
        for e in exprs:
            nodes = walk(e)
            if not any(isinstance(n, Bin) and n.op == "*" and isinstance(n.a, ConstRef)
                       and isinstance(n.b, ConstRef) for n in nodes):
                continue
            if isinstance(s, Pick):
                return "dead"
            if any(isinstance(n, ScalarRef) and n.name in i64 for n in nodes):
                return "i64"
            return "i32"
    return None


def recombines_digits(k: Kernel) -> bool:
    """A store at `(... % A) * B // B ...` with `A * B` past 2^31 - 1 in some launch."""
    for s in k.body:
        if not isinstance(s, Store) or s.index is None:
            continue
        for n in (n for e in s.index for n in walk(e)):
            if isinstance(n, Bin) and n.op == "//" and isinstance(n.a, Bin) and \
                    n.a.op == "*" and isinstance(n.a.a, Bin) and n.a.a.op == "%" and \
                    isinstance(n.b, ConstRef) and n.a.b == n.b and \
                    isinstance(n.a.a.b, ConstRef):
                a, b = n.a.a.b.name, n.b.name
                return any(ln.consts[a] * ln.consts[b] >= 2**31 for ln in k.launches)
    return False


def test_a_fixed_seed_generates_const_products_next_to_recombined_digits() -> None:
    meets: dict[str, int] = {}
    for k in kernels(recombines_digits):
        how = product_meets(k)
        if how is not None:
            meets[how] = meets.get(how, 0) + 1
    # the two that were bugs (an `i64` scalar, a branch never compiled) and the one that
    # stays a proof (next to a block id, a block count or an `i32` scalar)
    assert all(meets.get(how, 0) >= 5 for how in ("i64", "dead", "i32")), meets


def test_the_new_classes_reach_the_checker_and_the_interpreter_soundly() -> None:
    loader = Loader(Path(tempfile.mkdtemp(prefix="cutile-classes-")))
    # (two inputs of different extents are mostly refused now: the twin of one input runs)
    for name, want in (("extent-keys", lambda k: "extent-keys" in k.features),
                       ("const-product", lambda k: product_meets(k) is not None
                        and recombines_digits(k))):
        launched = 0
        for n, k in enumerate(kernels(want)):
            out = run_case(k, loader)
            bad = [f for f in out.findings if f.kind in UNSOUND | {"untyped", "internal"}]
            assert not bad, report(k, out)
            launched += bool(out.launched)
            if launched >= 3 or n >= 40:
                break
        assert launched >= 3, f"{name}: {launched} accepted kernels launched"
