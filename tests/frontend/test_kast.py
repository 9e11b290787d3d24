"""The frontend: Python source -> kernel AST (docs/kernel-ast.md), spans, and CT0xxx errors."""

from __future__ import annotations

import json

import pytest

import cutile
from cutile.core import Atomic, Const, Mut, Tensor, block_id, exp, f16, f32, i32, load_tile_like

SCALE = 3


@cutile.device
def twice(t):
    return t * 2


def test_document_has_resolved_params_and_schema() -> None:
    @cutile.entry
    def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1, 128]], a: f32, B: Const[int]):
        z.store(load_tile_like(x, z) * a)

    doc = json.loads(k.kast_json())
    assert doc["schema"] == "cutile.kast" and doc["version"] == 3
    (fn,) = doc["functions"]
    assert fn["kind"] == "entry" and fn["name"] == "k"
    params = [(p["name"], p["kind"], p["dtype"], p["shape"]) for p in fn["params"]]
    assert params == [
        ("z", "mut_tensor", "f32", ["B"]),
        ("x", "tensor", "f32", [-1, 128]),
        ("a", "scalar", "f32", None),
        ("B", "const", "int", None),
    ]


def test_spans_point_at_the_real_source_of_a_nested_function() -> None:
    @cutile.entry
    def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(exp(load_tile_like(x, z)))

    doc = k.document()
    src = doc.files[0].source.encode()
    fn = doc.functions[0]
    (stmt,) = fn.body
    assert src[stmt.span.lo : stmt.span.hi] == b"z.store(exp(load_tile_like(x, z)))"
    assert src[fn.name_span.lo : fn.name_span.hi] == b"k"
    call = stmt.value.args[0]
    assert call.func == "exp"
    assert src[call.span.lo : call.span.hi] == b"exp(load_tile_like(x, z))"
    line = doc.files[0].source.splitlines()[stmt.span.line - 1]
    assert line[stmt.span.col :].startswith("z.store(")


def test_globals_fold_and_device_functions_are_collected() -> None:
    @cutile.entry
    def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        z.store(twice(load_tile_like(x, z)) + SCALE)

    doc = k.document()
    assert [f.name for f in doc.functions] == ["k", "twice"]
    expr = doc.functions[0].body[0].value.args[0]
    assert expr.right.value == 3 and expr.right.type == "int"
    assert expr.left.kind == "call_device" and expr.left.func == "twice"


def test_builtins_are_prefixed_and_dtypes_resolved() -> None:
    @cutile.entry
    def k(z: Mut[Tensor[f16, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
        for _i in range(2):
            pass
        z.store(load_tile_like(x, z).astype(f16))

    doc = json.loads(k.kast_json())
    loop = doc["functions"][0]["body"][0]
    assert loop["kind"] == "for" and loop["iter"]["func"] == "builtins.range"
    store = doc["functions"][0]["body"][1]["value"]
    dtype = store["args"][0]["args"][0]
    assert {k: v for k, v in dtype.items() if k not in ("span", "nid")} == {
        "kind": "dtype", "name": "f16"}
    assert store["args"][1] == {"kind": "const", "value": None, "type": "none",
                                "span": store["span"], "nid": store["args"][1]["nid"]}


def _codes(err: cutile.KernelCheckError) -> list[str]:
    return err.codes


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        ("try:\n        pass\n    except Exception:\n        pass", "CT0001", "`Try`"),
        ("t = lambda q: q", "CT0001", "`Lambda`"),
        ("t = undefined_name_xyz", "CT0002", "undefined_name_xyz"),
        ("t = input(1)", "CT0007", "`input` is a Python builtin kernels do not have"),
        ("z[0] = 1", "CT0001", "subscript"),
    ],
)
def test_unsupported_source_is_a_coded_error_with_a_caret(body: str, code: str, needle: str,
                                                          tmp_path: object) -> None:
    import importlib.util
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "kern.py"
    path.write_text(
        "import cutile\nfrom cutile.core import Tensor, Mut, Const, f32\n\n"
        "@cutile.entry\n"
        "def k(z: Mut[Tensor[f32, ['B']]], B: Const[int]):\n"
        f"    {body}\n"
    )
    spec = importlib.util.spec_from_file_location("kern_" + code, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(cutile.KernelCheckError) as info:
        mod.k.check()
    err = info.value
    assert err.codes[0] == code
    text = str(err)
    assert code in text and needle in text
    assert "kern.py:6" in text  # the line of the offending statement
    assert "^" in text


def test_missing_annotation_and_unknown_const_name() -> None:
    def f1(z, B: Const[int]):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(f1).check()
    assert info.value.codes == ["CT0003"]

    def f2(z: Mut[Tensor[f32, ["Q"]]]):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(f2).check()
    assert info.value.codes == ["CT0005"]
    assert "`Q`" in str(info.value)


def test_a_shape_named_by_a_float_or_bool_const_is_refused() -> None:
    # The checker reads the name as the extent, but only an int `Const` is matched against
    # the tensor at launch: `Tensor[i32, ["S"]]` with `S: Const[float]` once read past a
    # 4-element input given S=16.0 (an adversarial review, 2026-12-01).
    def f(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, ["S"]], S: Const[float]):  # type: ignore[no-untyped-def]
        z.store(x.load_tile((4,), (block_id(0),)))

    def g(a: Atomic[Tensor[i32, ["S"]]], S: Const[bool]):  # type: ignore[no-untyped-def]
        pass

    for k in (f, g):
        with pytest.raises(cutile.KernelCheckError) as info:
            cutile.entry(k).check()
        assert info.value.codes == ["CT0005"]
        assert "a size is a `Const[int]`" in str(info.value)


def test_plain_int_annotation_suggests_const_or_dtype() -> None:
    def f(z: Mut[Tensor[f32, [128]]], n: int):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(cutile.KernelCheckError) as info:
        cutile.entry(f).check()
    assert info.value.codes == ["CT0003"]
    assert "Const[int]" in str(info.value)


def test_dsl_ops_refuse_to_run_outside_kernels() -> None:
    with pytest.raises(cutile.CutileError) as info:
        exp(1.0)
    assert info.value.code == "CT0010"
    with pytest.raises(cutile.CutileError):
        twice(1)


def test_i32_scalar_param() -> None:
    @cutile.entry
    def k(z: Mut[Tensor[i32, [64]]], v: i32):
        z.store(v)

    assert k.document().functions[0].params[1].kind == "scalar"


def test_print_and_fstrings_are_builtin_calls() -> None:
    """`print(...)` is `builtins.print` with every positional argument in one tuple; an
    f-string is `add` of string literals and `builtins.format(value, spec)` calls."""

    @cutile.entry
    def k(z: Mut[Tensor[f32, ["B"]]], B: Const[int]):
        t = z.load()
        print(t.shape)
        print(f"t = {t:.3f}!", t, sep=", ")
        z.store(t)

    doc = k.document()
    one, two = doc.functions[0].body[1].value, doc.functions[0].body[2].value
    assert one.func == "builtins.print" and one.args[0].kind == "tuple"
    assert len(one.args[0].elts) == 1 and one.args[0].elts[0].kind == "attribute"
    assert [a.kind for a in one.args[1:]] == ["const", "const"]
    assert (one.args[1].value, one.args[2].value) == (" ", "\n")
    fstr, tile = two.args[0].elts
    assert tile.kind == "name" and two.args[1].value == ", "
    assert fstr.kind == "binop" and fstr.op == "add"
    head, tail = fstr.left, fstr.right
    assert tail.kind == "const" and tail.value == "!"
    assert head.left.kind == "const" and head.left.value == "t = "
    fmt = head.right
    assert fmt.kind == "call" and fmt.func == "builtins.format"
    assert fmt.args[0].kind == "name" and fmt.args[1].value == ".3f"


def test_while_break_continue_and_return_reach_the_document() -> None:
    @cutile.device
    def first(t, n):
        i = 0
        while i < n:
            i += 1
            if i == 2:
                continue
            if i > 5:
                break
            return t
        return t * 2.0

    @cutile.entry
    def k(z: Mut[Tensor[f32, ["B"]]], n: i32, B: Const[int]):
        z.store(first(z.load(), n))

    k.check()
    doc = k.document()
    body = doc.function("first").body
    loop = body[1]
    assert loop.kind == "while"
    kinds = [s.kind for s in loop.body]
    assert kinds == ["augassign", "if", "if", "return"]
    assert loop.body[1].body[0].kind == "continue" and loop.body[2].body[0].kind == "break"
