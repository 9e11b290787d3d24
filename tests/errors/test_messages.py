"""Messages users read first: an op is named once, in its own backticks; a call of host code
in a kernel says what to write instead; every `cutile.core` operation documents itself."""

from __future__ import annotations

import math
import pydoc

import numpy as np
import pytest

import cutile
import cutile.core as core
from cutile import api
from cutile.core import Const, Mut, Tensor, f32, load_tile_like


@cutile.entry
def add(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], y: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def test_a_moved_tensor_names_its_op_once() -> None:
    z = api.zeros([64], f32).partition([16])
    x, y = api.ones([64], f32), api.ones([64], f32)
    op = add(z, x, y)
    with pytest.raises(cutile.BorrowError) as info:
        x.to_numpy()
    assert info.value.code == "CT5001"
    assert info.value.message == (
        f"cannot read: the tensor was moved into {op.name}, which has not completed")
    with pytest.raises(cutile.BorrowError) as info:
        add(api.zeros([64], f32).partition([16]), x, api.ones([64], f32))
    assert info.value.message.startswith("cannot pass it to `add` (op #")
    assert "``" not in str(info.value)
    op.sync()


def helper(t):  # type: ignore[no-untyped-def]
    return t


@cutile.entry
def calls_open(z: Mut[Tensor[f32, [16]]]):
    open("log.txt")
    z.store(z.load())


@cutile.entry
def calls_numpy(z: Mut[Tensor[f32, [16]]]):
    z.store(np.exp(z.load()))


@cutile.entry
def calls_math(z: Mut[Tensor[f32, [16]]]):
    z.store(math.sqrt(z.load()))


@cutile.entry
def calls_numpy_without_twin(z: Mut[Tensor[f32, [16]]]):
    z.store(np.linalg.norm(z.load()))


@cutile.entry
def calls_sorted(z: Mut[Tensor[f32, [16]]]):
    z.store(sorted(z.load()))


@cutile.entry
def calls_helper(z: Mut[Tensor[f32, [16]]]):
    z.store(helper(z.load()))


@pytest.mark.parametrize(("kernel", "message", "help"), [
    (calls_open, "`open` is a Python builtin kernels do not have",
     "kernels have the builtins `abs`, `float`, `format`, `int`, `len`, `max`, `min`, "
     "`print`, `range`"),
    (calls_numpy, "`numpy.exp` is a host function, not kernel code",
     "use `cutile.core.exp` (`from cutile.core import exp`)"),
    (calls_math, "`math.sqrt` is a host function, not kernel code",
     "use `cutile.core.sqrt`"),
    (calls_numpy_without_twin, "`numpy.linalg.norm` is a host function",
     "a kernel computes with the operations of `cutile.core`: `exp`"),
    (calls_sorted, "`sorted` is a Python builtin kernels do not have",
     "kernels have the builtins `abs`, `float`, `format`, `int`, `len`, `max`, `min`, "
     "`print`, `range`"),
    (calls_helper, "`helper` is a plain Python function",
     "decorate `helper` with `@cutile.device`"),
])
def test_calling_host_code_says_what_to_use_instead(kernel: cutile.EntryKernel, message: str,
                                                    help: str) -> None:
    with pytest.raises(cutile.KernelCheckError) as info:
        kernel.check()
    text = " ".join(str(info.value).split())
    assert info.value.codes == ["CT0007"]
    assert message in text and help in text.split("help:", 1)[1]
    if kernel is not calls_helper:
        assert "@cutile.device" not in text  # a device function cannot wrap host code


def _ops() -> list[str]:
    return [n for n in core.__all__ if isinstance(getattr(getattr(core, n), "__cutile_op__",
                                                          None), str)]


@pytest.mark.parametrize("name", _ops())
def test_every_core_operation_documents_itself(name: str) -> None:
    fn = getattr(core, name)
    assert fn.__name__ == fn.__qualname__ == name
    assert fn.__module__ == "cutile.core"
    assert fn.__doc__ and fn.__doc__.strip()
    page = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    assert "<locals>" not in page and f"{name}(" in page


@pytest.mark.parametrize("name", [*core.UNARY_MATH, *core.ATOMICS])
def test_generated_operations_have_a_real_docstring(name: str) -> None:
    doc = getattr(core, name).__doc__
    assert doc.count("\n") >= 5 and "Example::" in doc and f"{name}(" in doc
    if name in core.UNARY_MATH:
        assert f"`numpy.{name}`" in doc  # says where the host version is
    assert len(doc.split()) > 30
