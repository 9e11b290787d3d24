"""Loads ahead of the PDL wait (`pdl_early`, `lowering/pdl.py`, docs/pdl.md).

A PDL kernel may name read-only tensor parameters whose leading loads run before its
`griddepcontrol.wait`, while the kernel before it finishes. Soundness then rests on two
things, each tested here: the lowering puts nothing but pure ops and token-less loads of
those parameters ahead of the wait (and its check refuses anything else), and the launcher
gives such a kernel the PDL attribute only while no work in flight may write what those
loads read (else it launches in full stream order). What the kernel computes is the same
either way."""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np
import pytest

import cutile
from cutile import _native, api
from cutile.core import Const, Mut, Tensor, block_id, f32
from cutile.errors import ConfigError
from cutile.ir import Builder, Function, Module
from cutile.ir.op_table import MEMORY_OPS
from cutile.lowering.pdl import ordering_problems
from cutile.runtime.null_gpu import Count, null_gpu

rng = np.random.default_rng(11)
BO, BK, KT = 16, 32, 4


@cutile.entry(pdl=True, pdl_early=("w",))
def matvec(y: Mut[Tensor[f32, ["BO"]]], w: Tensor[f32, [-1, -1]], x: Tensor[f32, [-1]],
           BO: Const[int], BK: Const[int], KT: Const[int]):
    o = block_id(0)
    acc = w.load_tile((BO, BK), (o, 0)) * x.load_tile((BK,), (0,))[None, :]
    for k in range(1, KT):
        acc = acc + w.load_tile((BO, BK), (o, k)) * x.load_tile((BK,), (k,))[None, :]
    y.store(acc.sum(axis=1))


@cutile.entry
def scale_rows(w: Mut[Tensor[f32, ["BO", "BC"]]], BO: Const[int], BC: Const[int]):
    w.store(w.load() * 2.0)


CONSTS = {"BO": BO, "BK": BK, "KT": KT}


def lowered(kernel: Any, consts: dict[str, Any]) -> Any:
    return kernel.lowered(kernel.specialization(consts))


def early_views(fn: Function, names: tuple[str, ...] = ("w",)) -> dict[Any, str]:
    """The tensor views of the named parameters: the n-th `make_tensor_view` is the n-th
    tensor parameter's (y, w, x here)."""
    views = [op.result for op in fn.walk() if op.name == "make_tensor_view"]
    order = ("y", "w", "x")
    return {views[order.index(n)]: n for n in names}


def wait_index(fn: Function) -> int:
    return next(i for i, op in enumerate(fn.body.ops) if op.name == "gdc_wait_tko")


def test_the_first_weight_load_runs_ahead_of_the_wait_and_nothing_else_does() -> None:
    low = lowered(matvec, CONSTS)
    fn = low.module.functions[0]
    assert low.pdl and low.pdl_early == ("w",)
    at = wait_index(fn)
    ahead = fn.body.ops[:at]
    loads = [op for op in ahead if op.name in MEMORY_OPS]
    assert [op.name for op in loads] == ["load_view_tko"]
    assert not loads[0].attrs.get("has_token")
    assert fn.body.ops[at + 1].name == "gdc_launch_dependents_tko"
    # every other memory access (x's loads, the later w loads, y's store) after it
    assert sum(op.name in MEMORY_OPS for op in fn.walk()) > 1
    assert ordering_problems(fn, early_views(fn)) == []


def test_without_early_parameters_the_wait_stays_first() -> None:
    for kernel in (matvec.with_hints(pdl_early=()), matvec.with_hints(pdl_early=("x",))):
        low = lowered(kernel, CONSTS)    # x is named, but w's load comes first
        fn = low.module.functions[0]
        assert low.pdl_early == () and wait_index(fn) == 0
        assert ordering_problems(fn) == []


def test_the_check_refuses_any_other_access_ahead_of_the_wait() -> None:
    fn = lowered(matvec, CONSTS).module.functions[0]
    at = wait_index(fn)

    # the same structure with w not named early: its load may not precede the wait
    assert any("does not start with" in p for p in ordering_problems(fn, {}))

    # an x load moved ahead of the wait
    moved = copy.deepcopy(fn)
    e = early_views(moved)
    x_load = next(op for op in moved.body.ops[at:] if op.name == "load_view_tko"
                  and op.attrs.get("has_token"))
    moved.body.ops.remove(x_load)
    x_load.operands.pop()
    x_load.attrs["has_token"] = False
    moved.body.ops.insert(0, x_load)
    assert any("does not start with" in p for p in ordering_problems(moved, e))

    # a later op that takes the token of the early load
    leaked = copy.deepcopy(fn)
    e = early_views(leaked)
    early_tok = next(op for op in leaked.body.ops[:at] if op.name == "load_view_tko").results[1]
    store = next(op for op in leaked.walk() if op.name == "store_view_tko")
    store.operands[-1] = early_tok
    assert any("token of a load ahead" in p for p in ordering_problems(leaked, e))

    # a fresh token chain after the wait is still refused
    rooted = copy.deepcopy(fn)
    b = Builder(Module("m"))
    block = rooted.body
    with b.at(block):
        tok = b.make_token()
    block.ops.insert(wait_index(rooted) + 2, block.ops.pop())
    store = next(op for op in rooted.walk() if op.name == "store_view_tko")
    store.operands[-1] = tok
    assert any("starts a token chain" in p
               for p in ordering_problems(rooted, early_views(rooted)))


@pytest.mark.parametrize(("early", "needle"), [
    (("y",), "a `mut_tensor` parameter"), (("BO",), "a `const` parameter"),
    (("nope",), "not a parameter"),
])
def test_early_names_must_be_read_only_tensor_parameters(early: tuple[str, ...],
                                                         needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        lowered(matvec.with_hints(pdl_early=early), CONSTS)
    assert info.value.code == "CT8020" and needle in str(info.value)
    assert "read-only tensor parameters" in (info.value.hint or "")


@pytest.mark.parametrize("bad", ["w", ("w", 3), ("not a name",)])
def test_pdl_early_takes_a_tuple_of_names(bad: Any) -> None:
    with pytest.raises(ConfigError) as info:
        cutile.entry(pdl=True, pdl_early=bad)
    assert info.value.code == "CT8020"


def operands() -> tuple[Any, Any, Any, np.ndarray, np.ndarray]:
    w = rng.standard_normal((2 * BO, KT * BK)).astype(np.float32)
    x = rng.standard_normal(KT * BK).astype(np.float32)
    y = api.zeros([2 * BO], f32).partition([BO])
    return y, api.from_numpy(w), api.from_numpy(x), w, x


def test_it_computes_the_matrix_vector_product() -> None:
    y, wt, xt, w, x = operands()
    (y, wt, xt) = matvec(y, wt, xt, **CONSTS).sync()
    np.testing.assert_allclose(y.unpartition().to_numpy(), w.astype(np.float64) @ x,
                               rtol=1e-5, atol=1e-5)


def test_the_launch_overlaps_only_while_nothing_in_flight_writes_the_early_bytes() -> None:
    """On the null driver (no kernel runs, nothing completes until polled): the attribute
    (`cuLaunchKernelEx`) while the weights are at rest; a plain launch in full stream
    order while their upload, or a kernel that writes them, is still in flight; and a
    kernel without early loads keeps the attribute behind the same writer."""
    plain_twin = matvec.with_hints(pdl_early=())
    with null_gpu():
        _native.invalidate_launchers()
        y, wt, xt, _, _ = operands()
        with Count() as c:             # the upload of w is a writer still in flight
            y, wt, xt = matvec(y, wt, xt, **CONSTS).sync()
        assert c.made.get("cuLaunchKernel") == 1 and "cuLaunchKernelEx" not in c.made
        with Count() as c:             # everything before it waited for: at rest
            y, wt, xt = matvec(y, wt, xt, **CONSTS).sync()
        assert c.made.get("cuLaunchKernelEx") == 1 and "cuLaunchKernel" not in c.made

        for kernel, attribute in ((matvec, False), (plain_twin, True)):
            def after(w: Any, kernel: Any = kernel, y: Any = y, xt: Any = xt) -> Any:
                return kernel(y, w.unpartition(), xt, **CONSTS)

            with Count() as c:
                (y2, w2, x2) = scale_rows(wt.partition([2 * BO, KT * BK]), BO=2 * BO,
                                          BC=KT * BK).then(after).sync()
            launches = {k: v for k, v in c.made.items() if k.startswith("cuLaunch")}
            if attribute:
                assert launches == {"cuLaunchKernel": 1, "cuLaunchKernelEx": 1}
            else:
                assert launches == {"cuLaunchKernel": 2}
            y, wt, xt = y2, w2, x2
    _native.invalidate_launchers()


def test_sass_issues_the_early_load_before_the_wait() -> None:
    from cutile.dump import sass

    text = sass(matvec.compile(target="sm_90", **CONSTS).cubin)
    if text is None:
        pytest.skip("cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    lines = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)]
    wait = next(i for i, ln in enumerate(lines) if re.search(r"\bACQBULK\b", ln))
    loads = [i for i, ln in enumerate(lines) if re.search(r"\b(UTMALDG|LDG)\b", ln)]
    assert loads and loads[0] < wait < loads[-1]
