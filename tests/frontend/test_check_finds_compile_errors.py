"""`kernel.check()` (and `python -m cutile check`, the CI linter) finds every mistake the
compiler would find in a kernel's text: a kernel that passes the check does not fail to
compile for a reason visible before any `Const` is known."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Mut, Tensor, f32, i32, load_tile_like

HEADER = "import cutile\nfrom cutile.core import *\n\n"


def kernel_from(body: str, tmp_path: pathlib.Path, params: str = "z: Mut[Tensor[f32, [16]]]",
                extra: str = "") -> cutile.EntryKernel:
    path = tmp_path / "kern.py"
    path.write_text(HEADER + extra + f"@cutile.entry\ndef k({params}):\n" + body)
    spec = importlib.util.spec_from_file_location(f"kern_{abs(hash(body))}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        ("    for i in range(3):\n        break\n        i = 2\n    z.store(zeros((16,), f32))\n",
         "CT0001", "this code never runs: it follows `break`"),
        ("    i = 0\n    while i < 3:\n        if i > 1:\n            continue\n        else:\n"
         "            break\n        i = i + 1\n    z.store(zeros((16,), f32))\n",
         "CT0001", "never runs"),
        ("    if num_blocks(0) > 2:\n        return\n    else:\n        return\n"
         "    z.store(zeros((16,), f32))\n", "CT0001", "never runs"),
        ("    z.store(zeros((16,), f32))\n    return 1\n", "CT3012", "cannot return a value"),
        ("    z.store(zeros((16,), f32).frobnicate())\n", "CT3031", "has a method `frobnicate`"),
        ("    z.store(z.sum())\n", "CT3031", "an output tensor has no method `sum`"),
        ("    p = z.partition_mut((8,))\n    q = p.partition_mut((4,))\n"
         "    q.store(zeros((4,), f32), (0,))\n", "CT3031", "no method `partition_mut`"),
        ("    n = min(num_blocks(0), 4)\n    z.store(zeros((16,), f32))\n", "CT3051",
         "reduces a tile along an axis"),
    ],
)
def test_check_rejects_what_cannot_compile(body: str, code: str, needle: str,
                                           tmp_path: pathlib.Path) -> None:
    k = kernel_from(body, tmp_path)
    with pytest.raises(cutile.KernelCheckError) as info:
        k.check()
    assert info.value.codes[0] == code, str(info.value)
    assert needle in str(info.value)


def test_a_store_converts_to_the_tensors_element_type() -> None:
    """Storing an i32 tile into an f32 output converts, as numpy assignment and Triton's
    `tl.store` do: nothing the checker cannot see."""

    @cutile.entry
    def k(z: Mut[Tensor[f32, [16]]], x: Tensor[i32, [-1]]):
        z.store(load_tile_like(x, z) * 3)

    k.check()
    data = np.random.default_rng(1).integers(-1000, 1000, 40).astype(np.int32)
    z = api.zeros([40], f32).partition([16])
    z, _ = k(z, api.from_numpy(data)).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), (data * 3).astype(np.float32))
