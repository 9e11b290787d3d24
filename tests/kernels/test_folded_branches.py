"""Statically dead code is one checker fact that the lowering follows
(`KernelFacts.folded_branches`).

The checker runs once per kernel, before the `Const`s have values. A test of literals
(`if 0:`, `while False:`, `range(0)`) runs one branch in every specialization: the checker
reads that branch alone and the lowering emits it alone. A test of `Const`s (`if C == 2:`)
runs one branch per specialization: the checker reads each branch as the live one, so a
name bound to a different tensor on each is followed exactly (it was CT1010), and the
lowering keeps the branch the `Const`s select. A test known only on the device keeps
CT1010. The lowering folds no test the checker did not fold (it emits it for the device),
and refuses (CT9002) a fold it cannot make the checker's way."""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

import numpy as np
import pytest
from kernel_source import load_kernel

import cutile
from cutile import api, pipeline
from cutile.core import Const, Mut, Tensor, f32, load_tile_like
from cutile.errors import CutileError
from cutile.ir import print_module
from cutile.lowering.facts import LoweringFacts

CHOICE = """
@cutile.device
def put(a, b, t, D):
    w = a if D == 2 else b
    w.store(t)

@cutile.entry
def k(z: Mut[Tensor[f32, ["B"]]], o: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]],
      B: Const[int], C: Const[int]):
    t = load_tile_like(x, z) * 2.0 + 1.0
{body}
"""

FORMS = {
    "if-else": "    if C == 2:\n        w = z\n    else:\n        w = o\n    w.store(t)",
    "if-only": "    w = o\n    if C == 2:\n        w = z\n    w.store(t)",
    "elif": ("    if C == 1:\n        w = o\n    elif C == 2:\n        w = z\n    else:\n"
             "        w = o\n    w.store(t)"),
    "ifexp": "    w = z if C == 2 else o\n    w.store(t)",
    "flag": "    two = C == 2\n    if two and 1 < 2:\n        w = z\n    else:\n        w = o\n"
            "    w.store(t)",
    "device": "    put(z, o, t, C)",
    "sub": ("    if C == 2:\n        p = z.partition_mut((32,))\n    else:\n"
            "        p = o.partition_mut((32,))\n    for j in range(2):\n"
            "        p.store(zeros((32,), f32) + 7.0, (j,))"),
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("c", [2, 3])
def test_a_tensor_chosen_by_a_const_test_is_followed_in_each_specialization(
        tmp_path: Any, interpreter: None, form: str, c: int) -> None:
    k = load_kernel(tmp_path, "from cutile.core import zeros\n" + CHOICE.format(body=FORMS[form]))
    checked = k.check()
    assert checked.ok
    assert None in [b for _, _, b in checked.folded_branches]
    x = np.random.default_rng(c).uniform(1.0, 2.0, 256).astype(np.float32)
    with cutile.check_races():
        z, o, _ = k(api.full([256], -1.0, f32).partition([64]),
                    api.full([256], -3.0, f32).partition([64]), api.from_numpy(x), C=c).sync()
    want = 7.0 if form == "sub" else x * 2.0 + 1.0
    zz, oo = z.unpartition().to_numpy(), o.unpartition().to_numpy()
    np.testing.assert_array_equal(zz, want if c == 2 else np.full(256, -1.0, np.float32))
    np.testing.assert_array_equal(oo, want if c != 2 else np.full(256, -3.0, np.float32))


@pytest.mark.parametrize("test", ["n > 0", "block_id(0) < 1", "x.shape[0] > 4"])
@pytest.mark.parametrize("ifexp", [False, True])
def test_a_tensor_chosen_by_a_test_known_only_on_the_device_is_still_ct1010(
        tmp_path: Any, test: str, ifexp: bool) -> None:
    body = (f"    w = z if {test} else o\n" if ifexp else
            f"    if {test}:\n        w = z\n    else:\n        w = o\n")
    k = load_kernel(tmp_path, (
        "@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], o: Mut[Tensor[f32, [16]]],\n"
        "      x: Tensor[f32, [-1]], n: i32):\n" + body + "    w.store(zeros((16,), f32))\n"))
    with pytest.raises(cutile.KernelCheckError) as info:
        k.check()
    assert info.value.codes == ["CT1010"]


RACY = "        z.store(zeros((16,), f32), index=(block_id(0) // 2,))\n"


def control_ops(ir: str) -> list[str]:
    """The structured `if`, `for` and `loop` ops of a printed module."""
    return re.findall(r"^\s*(?:%[^=]*= )?(if|for|loop)\b", ir, re.M)


@pytest.mark.parametrize(("dead", "live"), [
    ("    while False:\n", "    while n < 0:\n"),
    ("    for _ in range(0):\n", "    for _ in range(0, n):\n"),
    ("    for _ in range(3, 1 + 2):\n", "    for _ in range(3, 1 + 3):\n"),
    # a bool bound is the integer 0 or 1 (the lowering once refused it: CT9002)
    ("    for _ in range(False):\n", "    for _ in range(False, n):\n"),
    ("    if 0:\n", "    if n < 0:\n"),
    ("    if 1 + 1 != 2:\n", "    if n + 1 != 2:\n"),
])
def test_a_body_of_literals_that_never_runs_is_not_read(tmp_path: Any, interpreter: None,
                                                        dead: str, live: str) -> None:
    # two blocks store one tile: a race, in the body that never runs, and in the one that may
    src = ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], n: i32):\n{head}" + RACY +
           "    z.store(zeros((16,), f32) + 1.0)\n")
    k = load_kernel(tmp_path, src.format(head=dead))
    folded = k.check().folded_branches
    assert [b for _, _, b in folded] == [False]
    text = print_module(k.lowered(k.specialization({})).module)
    assert not control_ops(text) and text.count("store_view") == 1, text
    with cutile.check_races():
        (z, *_) = k(api.zeros([64], f32).partition([16]), 3).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.ones(64, np.float32))
    with pytest.raises(cutile.KernelCheckError) as info:
        load_kernel(tmp_path, src.format(head=live)).check()
    assert "CT2001" in info.value.codes


def test_a_test_computed_from_literals_through_names_is_folded(tmp_path: Any,
                                                              interpreter: None) -> None:
    # `i0` is 2 (a device function's result, of literals): `i0 < 3` returns before the
    # racy store, in every specialization (the fuzzer's cases 11:17952 and 11:8330, refused
    # as CT2001 with a counterexample that never happens)
    k = load_kernel(tmp_path, (
        "@cutile.device\ndef two():\n    return 2 ** 3 // 4\n\n"
        "@cutile.device\ndef put(o, v, i0):\n    if i0 < 3:\n        return\n"
        "    o.store(v, index=(i0,))\n\n"
        "@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]]):\n    off = 0\n"
        "    put(z, zeros((16,), f32), two())\n    if off:\n" + RACY +
        "    z.store(zeros((16,), f32) + 1.0)\n"))
    assert sorted(b for _, _, b in k.check().folded_branches) == [False, True]
    with cutile.check_races():
        (z,) = k(api.zeros([64], f32).partition([16])).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.ones(64, np.float32))


def test_a_value_computed_differently_in_each_world_folds_per_specialization(
        tmp_path: Any, interpreter: None) -> None:
    k = load_kernel(tmp_path, CHOICE.format(body=(
        "    if C == 2:\n        w = z\n        n = 1\n    else:\n        w = o\n"
        "        n = 2\n    if n == 1:\n        t = t * 3.0\n    w.store(t)")))
    # `n == 1` is 1 == 1 where `w` is `z`, 2 == 1 where it is `o`: the compiler's value
    assert [b for _, _, b in k.check().folded_branches] == [None, None]
    x = np.random.default_rng(7).uniform(1.0, 2.0, 128).astype(np.float32)
    for c, scale in ((2, 3.0), (5, 1.0)):
        with cutile.check_races():
            z, o, _ = k(api.zeros([128], f32).partition([64]),
                        api.zeros([128], f32).partition([64]), api.from_numpy(x), C=c).sync()
        got = (z if c == 2 else o).unpartition().to_numpy()
        np.testing.assert_array_equal(got, (x * 2.0 + 1.0) * np.float32(scale))


def test_a_range_of_consts_is_read_as_live(tmp_path: Any) -> None:
    # `range(C)` may run in some specialization: its body is checked (the checker folds
    # ranges of literals only)
    k = load_kernel(tmp_path, "@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], C: Const[int]):\n"
                    "    for _ in range(C):\n" + RACY + "    z.store(zeros((16,), f32))\n")
    with pytest.raises(cutile.KernelCheckError) as info:
        k.check()
    assert "CT2001" in info.value.codes


def test_a_racy_branch_of_a_const_test_is_rejected(tmp_path: Any) -> None:
    # each branch is read as the live one: the race in the one C == 2 selects is found
    k = load_kernel(tmp_path, "@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], C: Const[int]):\n"
                    "    if C == 2:\n" + RACY + "    else:\n"
                    "        z.store(zeros((16,), f32))\n")
    with pytest.raises(cutile.KernelCheckError) as info:
        k.check()
    assert "CT2001" in info.value.codes
    # the blocks named collide only where the `Const`s select the branch
    assert "this store runs only on some paths" in str(info.value)


def _many_choices(n: int) -> str:
    params = ", ".join(f"C{i}: Const[int]" for i in range(n))
    src = ("@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [16]], "
           f"y: Tensor[f32, [16]], {params}):\n")
    for i in range(n):
        src += f"    if C{i} == 1:\n        a{i} = x\n    else:\n        a{i} = y\n"
    src += "    acc = zeros((16,), f32)\n"
    src += "".join(f"    acc = acc + a{i}.load_tile((16,), (0,))\n" for i in range(n))
    return src + "    z.store(acc)\n"


@pytest.mark.parametrize("n", [16, 40])
def test_tensor_choices_past_six_const_tests_are_ct1010_not_a_hang(tmp_path: Any,
                                                                   n: int) -> None:
    # the worlds double at each test that chooses a tensor: 6 are followed, 12 took 20 s
    # and 16 would take hours; past 6 a test is read as a run-time one
    k = load_kernel(tmp_path, _many_choices(n))
    t0 = time.perf_counter()
    with pytest.raises(cutile.KernelCheckError) as info:
        k.check()
    assert time.perf_counter() - t0 < 10
    assert set(info.value.codes) == {"CT1010"}


def test_six_const_tests_that_choose_tensors_are_followed(tmp_path: Any) -> None:
    k = load_kernel(tmp_path, _many_choices(6))
    k.check()
    x = np.arange(16, dtype=np.float32)
    y = -2 * x
    consts = {f"C{i}": int(i % 2 == 0) for i in range(6)}
    z, *_ = k(api.zeros([16], f32).partition([16]), api.from_numpy(x), api.from_numpy(y),
              **consts).sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), 3 * x + 3 * y)


FOLDS = """
@cutile.entry
def k(z: Mut[Tensor[f32, [16]]], n: i32, C: Const[int]):
    t = zeros((16,), f32)
    if 0:
        t = t + 5.0
    if C == 2:
        t = t + 1.0
    else:
        t = t + 2.0
    z.store(t)
"""


def _facts(k: Any) -> LoweringFacts:
    return LoweringFacts.of(k.check())


def _lower(k: Any, facts: LoweringFacts, c: int | None) -> str:
    consts = {} if c is None else {"C": c}
    return print_module(pipeline.lower(k.document(), k.specialization(consts), facts).module)


def test_the_lowering_folds_the_checkers_tests_and_no_other(tmp_path: Any) -> None:
    k = load_kernel(tmp_path, FOLDS)
    facts = _facts(k)
    assert sorted(facts.folded_branches.values(), key=str) == [False, None]
    assert not control_ops(_lower(k, facts, 2))
    # without the fold of `C == 2` the compiler emits the test (it does not fold alone)
    (lit_node,) = [n for n, b in facts.folded_branches.items() if b is False]
    unfolded = dataclasses.replace(facts, folded_branches={lit_node: False})
    text = _lower(k, unfolded, 2)
    assert control_ops(text) == ["if"], text


def _refused(k: Any, facts: LoweringFacts, c: int | None = 2) -> str:
    with pytest.raises(CutileError) as info:
        _lower(k, facts, c)
    assert info.value.code == "CT9002"
    return str(info.value)


def test_the_lowering_refuses_a_fold_it_cannot_make_the_checkers_way(tmp_path: Any) -> None:
    k = load_kernel(tmp_path, FOLDS)
    facts = _facts(k)
    (lit_node,) = [n for n, b in facts.folded_branches.items() if b is False]
    (const_node,) = [n for n, b in facts.folded_branches.items() if b is None]
    # the checker read the other branch of `if 0:`
    flipped = dataclasses.replace(facts, folded_branches={**facts.folded_branches,
                                                          lit_node: True})
    assert "finds it False, the checker True" in _refused(k, flipped)
    # a test of `Const`s folded to a branch its value does not select
    wrong = dataclasses.replace(facts, folded_branches={**facts.folded_branches,
                                                        const_node: False})
    assert "finds it True, the checker False" in _refused(k, wrong, 2)
    _lower(k, wrong, 3)  # where C == 2 is false, that is the branch


def test_the_lowering_refuses_to_fold_a_test_known_only_on_the_device(tmp_path: Any) -> None:
    k = load_kernel(tmp_path, FOLDS.replace("if C == 2:", "if n == 2:"))
    facts = _facts(k)
    assert list(facts.folded_branches.values()) == [False]
    (node,) = [n for n in _if_nodes(k) if n not in facts.folded_branches]
    forged = dataclasses.replace(facts, folded_branches={**facts.folded_branches, node: None})
    assert "cannot evaluate it before the kernel runs" in _refused(k, forged)


def test_the_lowering_refuses_a_dead_body_the_checker_did_not_fold(tmp_path: Any) -> None:
    # without the checker's fold, the compiler emits `while False:` as a loop, whose body
    # the checker never read: its store has no fact
    k = load_kernel(tmp_path, "@cutile.entry\ndef k(z: Mut[Tensor[f32, [16]]]):\n"
                    "    while False:\n" + RACY + "    z.store(zeros((16,), f32))\n")
    facts = dataclasses.replace(_facts(k), folded_branches={})
    assert "the checker has no fact for this" in _refused(k, facts, None)


def _if_nodes(k: Any) -> list[tuple[tuple[int, ...], int]]:
    from cutile.frontend import kast as K

    return [((), s.nid) for s in k.entry.body if isinstance(s, K.If)]


@cutile.entry
def scaled_by_branch(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int],
                     C: Const[int], S: Const[float]):
    t = load_tile_like(x, z)
    if S > 0.5 and C != 1:
        t = t * S
    elif not (C > 3):
        t = t + 1.0
    z.store(t)


@pytest.mark.parametrize(("c", "s"), [(1, 0.75), (2, 0.75), (2, 0.25), (5, 0.25)])
def test_folded_tests_of_consts_compute_as_numpy(interpreter: None, c: int, s: float) -> None:
    x = np.random.default_rng(c).uniform(-4.0, 4.0, 200).astype(np.float32)
    with cutile.check_races():
        z, _ = scaled_by_branch(api.zeros([200], f32).partition([64]), api.from_numpy(x),
                                C=c, S=s).sync()
    want = x * np.float32(s) if (s > 0.5 and c != 1) else (x + 1.0 if c <= 3 else x)
    np.testing.assert_allclose(z.unpartition().to_numpy(), want, rtol=1e-6)
