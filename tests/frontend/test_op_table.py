"""One table of DSL signatures (`rust/cutile-kast/ops.json`): the stubs in `cutile.core`, the
frontend's binding, the checker and the lowering all agree with it, and a call is bound once,
in the frontend, so no later stage ever sees a keyword."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import cutile
from cutile import api, core
from cutile.core import Const, Mut, Tensor, f32, load_tile_like, zeros
from cutile.frontend.signatures import table
from cutile.lowering.dsl_ops import MATH_OPS, DslOps


def test_every_core_op_has_a_signature_with_the_same_parameters() -> None:
    ops = table().functions
    stubs = {v.__cutile_op__: v for v in vars(core).values() if hasattr(v, "__cutile_op__")}
    assert set(stubs) == set(ops)
    for name, stub in stubs.items():
        params = list(inspect.signature(stub).parameters.values())
        sig = ops[name]
        assert [p.name for p in params] == [p.name for p in sig.params], name
        for p, q in zip(params, sig.params, strict=True):
            assert (p.default is inspect.Parameter.empty) == q.required, (name, p.name)
            if not q.required and not isinstance(q.default, dict):
                assert p.default == q.default, (name, p.name)
        assert core.OPS[name] == sig.unsafe, name


def test_the_lowering_handles_every_lowered_op() -> None:
    for name, sig in table().functions.items():
        if sig.lowered:
            assert name in MATH_OPS or hasattr(DslOps, f"f_{name}"), name
    for name in table().builtins:
        assert hasattr(DslOps, f"f_py_{name}"), name
    prefixes = {"mut": "m_mut_", "tensor": "m_tensor_", "sub": "m_sub_", "tile": "m_tile_"}
    for name, sig in table().methods.items():
        if sig.lowered:
            for r in sig.receivers:
                assert hasattr(DslOps, prefixes[r] + name), (r, name)


def _doc(fn: object) -> dict[str, object]:
    return json.loads(cutile.entry(fn).kast_json())  # type: ignore[arg-type]


def _call(doc: dict[str, object], stmt: int = 0) -> dict[str, object]:
    body = doc["functions"][0]["body"]  # type: ignore[index]
    return body[stmt]["value"]  # type: ignore[no-any-return]


def test_keywords_are_placed_and_defaults_filled() -> None:
    def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(load_tile_like(like=z, src=x))

    store = _call(_doc(k))
    assert store["kind"] == "method" and "kwargs" not in store
    like = store["args"][0]
    assert [a.get("id") for a in like["args"][:2]] == ["x", "z"]
    assert like["args"][2]["value"] == "zero"  # the default padding
    assert store["args"][1]["type"] == "none"  # no index: the own tile


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        ("load_tile_like(x, z, pad='zero')", "has no parameter `pad`"),
        ("load_tile_like(x, like=z, src=x)", "got argument `src` twice"),
        ("load_tile_like(x)", "is missing argument `like`"),
        ("load_tile_like(x, z, 'zero', 1, True, 2)", "at most 5 positional"),
    ],
)
def test_wrong_arguments_are_typed_errors(call: str, needle: str, tmp_path: object) -> None:
    import importlib.util
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "kern.py"
    path.write_text(
        "import cutile\nfrom cutile.core import *\n\n@cutile.entry\n"
        "def k(z: Mut[Tensor[f32, ['B']]], x: Tensor[f32, [-1]], B: Const[int]):\n"
        f"    z.store({call})\n"
    )
    spec = importlib.util.spec_from_file_location("kern_args", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(cutile.KernelCheckError) as info:
        mod.k.check()
    assert info.value.codes == ["CT3039"]
    signature = "load_tile_like(src, like, padding='zero', latency=None, allow_tma=None)"
    assert needle in str(info.value) and signature in str(info.value)


def test_unknown_method_is_refused_by_the_frontend() -> None:
    def k(z: Mut[Tensor[f32, [16]]]):
        z.store(zeros((16,), f32).frobnicate())

    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(k).check()
    assert info.value.codes == ["CT3031"]


def test_range_has_one_spelling() -> None:
    def k(z: Mut[Tensor[f32, [16]]]):
        for _i in range(4):
            pass
        z.store(zeros((16,), f32))

    loop = _doc(k)["functions"][0]["body"][0]  # type: ignore[index]
    assert [a["value"] for a in loop["iter"]["args"]] == [0, 4, 1]


def test_variadic_method_arguments_become_one_tuple() -> None:
    def k(z: Mut[Tensor[f32, [4, 4]]]):
        z.store(zeros((16,), f32).reshape(4, 4))

    reshape = _call(_doc(k))["args"][0]
    assert reshape["method"] == "reshape" and reshape["args"][0]["kind"] == "tuple"


def test_keyword_order_does_not_change_what_runs() -> None:
    """Class 1 of the soundness issue: a keyword call is checked and compiled alike."""

    @cutile.entry
    def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(load_tile_like(like=z, src=x) * 2.0)

    data = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    x = api.from_numpy(data)
    z = api.zeros([300], f32).partition([128])
    z, x = k(z, x).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), data * 2)
