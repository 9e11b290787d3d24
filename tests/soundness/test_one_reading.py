"""Regressions for the classes of issue 6 that are about reading a kernel, not racing:
values the kernel AST must carry to the checker (class 9), launch predicates that are typed
trees rather than text (class 10), and inputs that must not crash the process. Each kernel
here is checked, compiled and run on the interpreter against numpy."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cutile
from cutile import api
from cutile.core import Const, Mut, Tensor, block_id, f32, full, i32, load_tile_like
from cutile.errors import KernelCheckError, LaunchError

rng = np.random.default_rng(6)

# -- 9. strings, None and non-finite floats reach the checker ----------------------------


@cutile.entry
def padded_max(z: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z, padding="neg_inf")
    z.store(t * 0.0 + t.max(axis=None))


@cutile.entry
def clamp_below(z: Mut[Tensor[f32, [8]]], x: Tensor[f32, [-1]]):
    t = load_tile_like(x, z, padding="zero")
    lo = -math.inf
    z.store(t + (lo if False else 0.0) + float("-inf") * 0.0 + lo * 0.0)


def test_9_padding_strings_and_axis_none_reach_the_checker() -> None:
    n = 13  # the last tile is ragged: its padding is -inf, so the max ignores it
    xs = rng.standard_normal(n).astype(np.float32)
    report = padded_max.check_report()
    assert report, "the checker saw the loads"
    z = api.zeros([n], f32).partition([8])
    (z, _) = padded_max(z, api.from_numpy(xs)).sync()
    got = z.unpartition().to_numpy()
    np.testing.assert_allclose(got[:8], np.full(8, xs[:8].max()), rtol=1e-6)
    np.testing.assert_allclose(got[8:], np.full(n - 8, xs[8:].max()), rtol=1e-6)


def test_9_non_finite_floats_reach_the_checker() -> None:
    clamp_below.check()
    xs = rng.standard_normal(16).astype(np.float32)
    z = api.zeros([16], f32).partition([8])
    (z, _) = clamp_below(z, api.from_numpy(xs)).sync()
    # -inf * 0.0 is nan in IEEE arithmetic, as numpy computes it
    with np.errstate(invalid="ignore"):
        ref = xs + 0.0 + np.float32(-np.inf) * 0 + np.float32(-np.inf) * 0
    np.testing.assert_array_equal(np.isnan(z.unpartition().to_numpy()), np.isnan(ref))


# -- 10. launch predicates are typed trees: parameter names are only names ---------------


@cutile.entry
def names_like_predicate_words(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]], dim: i32,
                               grid: i32, tiles: i32, cdiv: i32, B: Const[int]):
    t = x.load_tile((4,), (dim + grid + tiles + cdiv,))
    z.store(t)


def test_10_scalars_named_like_predicate_words_launch() -> None:
    xs = np.arange(40, dtype=np.int32)
    (z, *_) = names_like_predicate_words(api.zeros([4], i32).partition([4]), api.from_numpy(xs),
                                         1, 2, 3, 1, B=1).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), xs[28:32])
    # the launch predicate bounds the load: tile 10 of a 10-tile input is refused, typed
    with pytest.raises(LaunchError) as err:
        names_like_predicate_words(api.zeros([4], i32).partition([4]), api.from_numpy(xs),
                                   4, 2, 3, 1, B=1)
    assert err.value.code == "CT6200"
    assert "cdiv + dim + grid + tiles" in str(err.value)


def test_10_deep_nesting_is_a_typed_error_in_a_child_process(tmp_path: Path) -> None:
    # 20,000 nested parentheses once crashed the predicate parser (SIGSEGV). Python's own
    # parser stops at 200 parentheses and its compiler near 1,000 levels; a chain of 900
    # additions nests as deep in the AST. Run it in a child so that a crash fails this test
    # instead of the suite.
    src = tmp_path / "deep.py"
    src.write_text(textwrap.dedent(f"""
        import cutile
        from cutile.core import Mut, Tensor, i32, block_id, full
        from cutile.errors import CutileError

        @cutile.entry
        def k(z: Mut[Tensor[i32, [4]]]):
            z.store(full((4,), block_id(0){" + block_id(0)" * 900}, i32))

        try:
            k.check()
        except CutileError as e:
            print("typed", e.code)
    """))
    proc = subprocess.run([sys.executable, str(src)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "typed CT0011" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def test_3_constants_too_wide_are_typed_before_compiling() -> None:
    # a literal of 2**32 + 1 was an untyped OverflowError after check() accepted it
    @cutile.entry
    def wide(z: Mut[Tensor[i32, [4]]]):
        z.store(full((4,), 1, i32), index=(block_id(0) + 4294967297 - 4294967297,))

    with pytest.raises(KernelCheckError) as err:
        wide.check()
    assert err.value.code == "CT3052"


def test_3_a_const_too_wide_is_refused_at_launch() -> None:
    @cutile.entry
    def shifted(z: Mut[Tensor[i32, [4]]], x: Tensor[i32, [-1]], C: Const[int]):
        z.store(x.load_tile((4,), (block_id(0) + C - C,)))

    xs = api.from_numpy(np.arange(16, dtype=np.int32))
    with pytest.raises(LaunchError) as err:
        shifted(api.zeros([16], i32).partition([4]), xs, C=2**40)
    assert err.value.code == "CT6103"
    (z, _) = shifted(api.zeros([16], i32).partition([4]), xs, C=7).sync()
    np.testing.assert_array_equal(z.unpartition().to_numpy(), np.arange(16))
