"""Python a kernel author may write that the frontend must either read as Python does or
refuse with a typed, coded error (source line, caret, hint): never an untyped exception,
never a kernel that means something else on the device."""

from __future__ import annotations

import importlib.util
import pathlib
import textwrap

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import f32, i32
from cutile.frontend import kast as K

HEADER = "import cutile\nfrom cutile.core import *\n\n"
PARAMS = "z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]"
ATOMIC_PARAMS = "c: Atomic[Tensor[i32, [-1]]], x: Tensor[i32, [-1]]"


def load(src: str, tmp_path: pathlib.Path, name: str = "kern") -> object:
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"adv_{name}_{abs(hash(src))}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernel(body: str, tmp_path: pathlib.Path, params: str = PARAMS, extra: str = "") -> object:
    src = HEADER + extra + f"@cutile.entry\ndef k({params}):\n" + textwrap.indent(
        textwrap.dedent(body), "    ")
    return load(src, tmp_path).k  # type: ignore[attr-defined]


def refused(k: object, code: str) -> cutile.KernelCheckError:
    with pytest.raises(cutile.KernelCheckError) as info:
        k.check()  # type: ignore[attr-defined]
        k.lowered(k.specialization({}))  # type: ignore[attr-defined]  # the lowering's
    err = info.value
    assert err.codes[0] == code, str(err)
    assert "^" in str(err), str(err)
    assert err.diagnostics[0].help, f"no hint:\n{err}"
    return err


# ---------------------------------------------------------------- capturing the source


def test_a_kernel_in_a_class_with_a_string_at_column_0_is_read(tmp_path: pathlib.Path) -> None:
    """Its lines share no indentation (the string's second line starts the line), which
    the dedented parse refused with an IndentationError."""
    mod = load(HEADER + f"class A:\n    @staticmethod\n    @cutile.entry\n    def k({PARAMS}):\n"
               "        s = '''\nhello'''\n        z.store(load_tile_like(x, z).frob())\n",
               tmp_path)
    err = refused(mod.A.k, "CT3031")  # type: ignore[attr-defined]
    assert err.diagnostics[0].primary.line == 10


def test_a_string_in_a_nested_kernel_keeps_its_python_value(tmp_path: pathlib.Path) -> None:
    """Dedenting the function's lines stripped the indentation inside its multi-line
    strings too: the kernel's assert message differed from the one Python compiled."""
    mod = load(HEADER + f"def make():\n    @cutile.entry\n    def k({PARAMS}):\n"
               "        assert block_id(0) >= 0, '''first\n        second'''\n"
               "        z.store(load_tile_like(x, z))\n    return k\nk = make()\n", tmp_path)
    body = mod.k.document().function("k").body  # type: ignore[attr-defined]
    asserts = [s for s in body if isinstance(s, K.Assert)]
    assert [a.msg for a in asserts] == ["first\n        second"]


def test_a_lambda_inside_a_multiline_call_is_ct0004(tmp_path: pathlib.Path) -> None:
    """Its lines cut out of the call (`b=cutile.entry(lambda z: z), c=2)`) do not parse:
    that was a SyntaxError out of `check()`."""
    mod = load(HEADER + "ks = dict(a=1,\n          b=cutile.entry(lambda z: z), c=2)\n", tmp_path)
    with pytest.raises(cutile.CutileError) as info:
        mod.ks["b"].check()  # type: ignore[attr-defined]
    assert info.value.code == "CT0004" and info.value.hint


@pytest.mark.parametrize(("setup", "target", "needle"), [
    ("import functools\nf = functools.partial(lambda t, s: t, s=1)\n", "cutile.device(f)",
     "`partial`"),
    ("class C:\n    def __call__(self, t):\n        return t\n", "cutile.device(C())", "`C`"),
    ("class A:\n    @classmethod\n    def g(cls):\n        pass\n",
     "cutile.entry(A.__dict__['g'])", "put `@classmethod` above"),
    ("@cutile.entry\ndef g(z: Mut[Tensor[f32, [16]]]):\n    pass\n", "cutile.entry(g)",
     "decorate it once"),
])
def test_decorating_what_is_not_a_function_is_ct0004(setup: str, target: str, needle: str,
                                                     tmp_path: pathlib.Path) -> None:
    """A `functools.partial` or a callable object raised AttributeError (`__name__`) at
    the decorator; a classmethod or a kernel a misleading 'cannot read the source'."""
    with pytest.raises(cutile.CutileError) as info:
        load(HEADER + setup + f"k = {target}\n", tmp_path)
    assert info.value.code == "CT0004"
    assert needle in str(info.value)


def test_a_kernel_wrapped_by_another_decorator_says_which_order(tmp_path: pathlib.Path) -> None:
    deco = ("import functools\ndef deco(f):\n    @functools.wraps(f)\n"
            "    def wrapper(*a, **kw):\n        return f(*a, **kw)\n    return wrapper\n")
    mod = load(HEADER + deco + f"@cutile.entry\n@deco\ndef k({PARAMS}):\n"
               "    z.store(load_tile_like(x, z))\n", tmp_path)
    with pytest.raises(cutile.CutileError) as info:
        mod.k.check()  # type: ignore[attr-defined]
    assert info.value.code == "CT0004"
    assert "directly above the `def`" in str(info.value)


def test_a_global_whose_attribute_raises_is_ct0002(tmp_path: pathlib.Path) -> None:
    """A property or `__getattr__` that raises (here KeyError) escaped untyped."""
    extra = "class M:\n    def __getattr__(self, n):\n        raise KeyError(n)\nm = M()\n"
    err = refused(kernel("z.store(load_tile_like(x, z) * m.B)\n", tmp_path, extra=extra),
                  "CT0002")
    assert "raised KeyError" in str(err)


# ---------------------------------------------------------------- annotations


@pytest.mark.parametrize(("annotation", "needle"), [
    ("Mut[Tensor[f32, [0]]]", "must be >= 1"),
    ("Mut[Tensor[f32, [-2]]]", "must be >= 1"),
    ("Mut[Tensor[f32, [16.0]]]", "shape entries are ints"),
    ("Mut[Tensor[f32, [2**70]]]", "below 2^31"),
    ("Mut[Tensor[f32, 16]]", "must be a list"),
    ("Mut[Tensor[float, [16]]]", "use Tensor[dtype, shape]"),
    ("Mut[f32]", "use Mut[Tensor"),
    ("Mut[Tensor[f32, []]]", "got rank 0"),
    ("Mut[Tensor[f32, [-1]]]", "the tile each block writes"),     # passed `check()`,
    ("Mut[Tensor[f32, [4, -1]]]", "the tile each block writes"),  # then no launch fit
    ("Const[str]", "use Const[int]"),
])
def test_a_wrong_annotation_is_a_coded_error_at_its_line(annotation: str, needle: str,
                                                         tmp_path: pathlib.Path) -> None:
    """These raised a bare TypeError at the `def` (and `[2**70]` a ValueError out of the
    native checker); now CT0003, still a TypeError, with the line and a caret."""
    with pytest.raises(cutile.AnnotationError) as info:
        load(HEADER + f"@cutile.entry\ndef k(z: {annotation}):\n    pass\n", tmp_path)
    err = info.value
    assert isinstance(err, TypeError) and err.code == "CT0003" and err.hint
    text = str(err)
    assert needle in text and "kern.py:5:" in text and "^" in text, text


# ---------------------------------------------------------------- effects and and/or


@pytest.mark.parametrize(("body", "needle"), [
    ("f = block_id(0) > 100\nq = f and (atomic_add(c, arange(1, i32), 1).item() > 0)\n",
     "on the right of `and`"),
    ("q = atomic_add(c, arange(4, i32), 1) if block_id(0) > 100 else 0\n",
     "branch of a conditional expression"),
    ("if 0 < atomic_add(c, arange(1, i32), 1).item() < 100:\n    pass\n",
     "middle of a chained comparison"),
    ("q = block_id(0) < 100 or bump(c) > 0\n", "`bump(...)`"),
])
def test_an_effect_python_would_skip_or_run_once_is_refused(body: str, needle: str,
                                                           tmp_path: pathlib.Path) -> None:
    """The kernel evaluates every operand of `and`/`or`, both branches of `x if c else y`,
    and the middle of a chain twice: these atomics ran where Python skips them (counts
    [1 1 1 1] instead of [0 0 0 0]) or twice ([2 0 0 0] instead of [1 0 0 0])."""
    extra = ("@cutile.device\ndef bump(c):\n    return atomic_add(c, arange(1, i32), 1).item()\n")
    err = refused(kernel(body, tmp_path, ATOMIC_PARAMS, extra), "CT0001")
    assert needle in str(err)


def test_an_effect_under_an_if_statement_runs_as_python_says(tmp_path: pathlib.Path) -> None:
    """What the hint says to write instead: runs once, only where the condition holds;
    pure calls in the refused positions stay accepted."""
    k = kernel("v = block_id(0)\nif 0 <= v < 2 and v >= 0:\n"
               "    q = atomic_add(c, arange(4, i32) * 0 + v, x.load_tile((4,), (v,)))\n",
               tmp_path, ATOMIC_PARAMS)
    data = np.random.default_rng(3).integers(1, 50, 12).astype(np.int32)
    c, _ = k(api.zeros([4], i32), api.from_numpy(data), grid=(3,)).sync()  # type: ignore[operator]
    expect = np.zeros(4, np.int64)
    for b in range(2):
        expect[b] += data[4 * b:4 * b + 4].sum()
    np.testing.assert_array_equal(c.to_numpy(), expect)


def test_and_or_give_the_deciding_value_as_python_does(tmp_path: pathlib.Path) -> None:
    """`n or 16` is `n` where `n` is not 0: the lowering gave the bool (1) instead."""
    k = kernel("b = block_id(0)\nt = load_tile_like(x, z)\n"
               "z.store(t + (b or 5) * 100 + (b and 7) * 10 + (0 or B) + (B and 0.5))\n",
               tmp_path, PARAMS + ", B: Const[int]")
    data = np.random.default_rng(5).standard_normal(48).astype(np.float32)
    z, _ = k(api.zeros([48], f32).partition([16]), api.from_numpy(data),  # type: ignore[operator]
             B=3).sync()
    blocks = np.repeat(np.arange(3), 16)
    expect = data + np.where(blocks, blocks, 5) * 100 + np.where(blocks, 7, 0) * 10 + 3 + 0.5
    np.testing.assert_allclose(z.unpartition().to_numpy(), expect, rtol=1e-6)


# ---------------------------------------------------------------- constants


@pytest.mark.parametrize("expr", [
    "2 ** 100000000", "1 << 100000000000", "int(1e400)", "4611686018427387904 * 4",
])
def test_a_constant_that_cannot_be_a_kernel_int_is_ct3003(expr: str,
                                                         tmp_path: pathlib.Path) -> None:
    """These escaped the lowering as OverflowError (or took minutes to fold)."""
    refused(kernel(f"a = {expr}\nz.store(load_tile_like(x, z) * 0 + a)\n", tmp_path), "CT3003")


# ---------------------------------------------------------------- every refusal has a hint


@pytest.mark.parametrize(("body", "code"), [
    ("f = lambda q: q\n", "CT0001"),
    ("z.store((t := load_tile_like(x, z)))\n", "CT0001"),
    ("a = (x, z)\nz.store(load_tile_like(*a))\n", "CT0001"),
    ("d = 1\nz.store(load_tile_like(**d))\n", "CT0001"),
    ("t = load_tile_like(x, z)\nt.a += 1\n", "CT0001"),
    ("i = 0\nwhile i < 2:\n    i += 1\nelse:\n    pass\n", "CT0001"),
    ("with open('f') as f:\n    pass\n", "CT0001"),
    ("match 1:\n    case 1:\n        pass\n", "CT0001"),
    ("assert block_id(0) >= 0, f'msg {1}'\n", "CT0001"),
    ("w = 3\nprint(f'{block_id(0):{w}}')\n", "CT0001"),
    ("if block_id(0) in (0, 1):\n    pass\n", "CT0001"),
    ("a = {1, 2}\n", "CT0001"),
    ("a = [i for i in range(3)]\n", "CT0001"),
    ("a, *b = (1, 2, 3)\n", "CT0001"),
    ("class A:\n    pass\n", "CT0001"),
    ("a = b'x'\n", "CT0006"),
    ("range = 3\nfor i in range(2):\n    pass\n", "CT0001"),
    ("f = load_tile_like\n", "CT0006"),
    ("a = cutile.core.nonexistent\n", "CT0002"),
    ("a = 1 >> -1\nz.store(load_tile_like(x, z) * 0 + a)\n", "CT3003"),
])
def test_every_frontend_refusal_says_what_to_do(body: str, code: str,
                                                tmp_path: pathlib.Path) -> None:
    refused(kernel(body + "z.store(load_tile_like(x, z))\n", tmp_path), code)
