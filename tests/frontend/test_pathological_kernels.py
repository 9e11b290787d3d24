"""Legal-looking kernels whose size or shape asked the checker (or the lowering) for work
that grew without bound: a term nested thousands deep (a native stack overflow: the
process died), terms or tuples that double at each line, device functions that fan out.
Each runs in a child process with a time limit, so a crash or a hang fails the test
instead of taking the test run down with it."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

HEADER = "import cutile\nfrom cutile.core import *\n\n"
PARAMS = "z: Mut[Tensor[f32, [16]]], x: Tensor[f32, [-1]]"
LOAD_AT_I = "z.store(x.load_tile((16,), (i,)))\n"

# Checks (and, when accepted, lowers) the kernel `k` of the file in argv[1] in a thread
# with a 512 KiB stack (a worker thread of an application may have no more), and prints
# {"codes": [...], "hints": bool, "carets": bool} or {"untyped": "..."}.
CHILD = r"""
import importlib.util, json, sys, threading
import cutile
spec = importlib.util.spec_from_file_location("pathological", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out = {}
def run():
    try:
        mod.k.check()
        mod.k.lowered(mod.k.specialization(json.loads(sys.argv[2])))
        out["codes"] = []
    except cutile.KernelCheckError as e:
        out["codes"] = list(e.codes)
        out["hints"] = all(d.help for d in e.diagnostics)
        out["carets"] = "^" in str(e)
    except BaseException as e:
        out["untyped"] = f"{type(e).__name__}: {e}"[:500]
threading.stack_size(512 << 10)
t = threading.Thread(target=run)
t.start()
t.join()
print(json.dumps(out))
"""


def check_isolated(body: str, tmp_path: pathlib.Path, extra: str = "",
                   timeout: float = 20, params: str = PARAMS,
                   consts: dict[str, int] | None = None) -> dict[str, object]:
    src = HEADER + extra + f"@cutile.entry\ndef k({params}):\n" + textwrap.indent(
        textwrap.dedent(body), "    ")
    path = tmp_path / "pathological.py"
    path.write_text(src)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    try:
        r = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(consts or {})],
                           capture_output=True,
                           text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"checking took more than {timeout} s")
    assert r.returncode == 0, f"the process died (status {r.returncode}):\n{r.stderr[-2000:]}"
    result: dict[str, object] = json.loads(r.stdout.strip().splitlines()[-1])
    assert "untyped" not in result, result["untyped"]
    return result


def test_a_term_nested_thousands_deep_does_not_crash_the_process(
        tmp_path: pathlib.Path) -> None:
    """`i = cdiv(i, 3)` 1,500 times nested the checker's term 1,500 deep, and each walk
    of it recursed that deep: past the thread's stack, a segfault of the whole process.
    The checker stops following a term past 256 atoms (the load gets a device check)."""
    body = "i = block_id(0)\n" + "i = cdiv(i, 3)\n" * 1500 + LOAD_AT_I
    assert check_isolated(body, tmp_path)["codes"] == []


def test_a_term_that_doubles_at_each_line_checks_quickly(tmp_path: pathlib.Path) -> None:
    """`i = i // 2 + i // 3` names `i` twice: the term doubled at each line, and 40 lines
    took the checker 2^40 steps."""
    body = "i = block_id(0)\n" + "i = i // 2 + i // 3\n" * 40 + LOAD_AT_I
    assert check_isolated(body, tmp_path, timeout=10)["codes"] == []


def test_a_store_at_a_term_too_large_to_follow_is_refused(tmp_path: pathlib.Path) -> None:
    """An index the checker stopped following cannot be proved injective: CT2003 at the
    store, not an acceptance."""
    body = ("i = block_id(0)\n" + "i = i // 2 + i // 3 + i\n" * 30
            + "z.store(load_tile_like(x, z), index=(i,))\n")
    result = check_isolated(body, tmp_path, timeout=10)
    assert result["codes"] == ["CT2003"] and result["carets"] and result["hints"]


def fan_out(levels: int, leaf: str = "a + 1") -> str:
    """`g{n}` calls `g{n-1}` twice: 2^(n+1) - 2 inlined calls."""
    src = f"@cutile.device\ndef g0(a):\n    return {leaf}\n\n"
    for n in range(1, levels + 1):
        src += f"@cutile.device\ndef g{n}(a):\n    return g{n - 1}(a) + g{n - 1}(a)\n\n"
    return src


@pytest.mark.parametrize("levels", [9, 40])
def test_device_functions_that_fan_out_are_ct1019(levels: int,
                                                    tmp_path: pathlib.Path) -> None:
    """Every call site of a device function is inlined, so 16 functions that each call
    the previous twice asked the checker to walk 2^17 bodies (no answer in a minute)."""
    result = check_isolated(f"i = g{levels}(block_id(0))\n" + LOAD_AT_I, tmp_path,
                            extra=fan_out(levels), timeout=10)
    assert result["codes"] == ["CT1019"] and result["carets"] and result["hints"]


def test_a_fan_out_under_the_cap_is_checked(tmp_path: pathlib.Path) -> None:
    result = check_isolated("z.store(g5(load_tile_like(x, z)))\n", tmp_path,
                            extra=fan_out(5, "a * 2.0"), timeout=10)
    assert result["codes"] == []


@pytest.mark.parametrize("seed", ["(block_id(0), 1)", "load_tile_like(x, z)", "()"])
def test_a_tuple_that_doubles_at_each_line_is_ct1019(seed: str,
                                                     tmp_path: pathlib.Path) -> None:
    """`t = (t, t)` 30 times: each copy of the tuple doubled (2^30 values: the memory ran
    out before the time did)."""
    body = f"t = {seed}\n" + "t = (t, t)\n" * 30 + "z.store(load_tile_like(x, z))\n"
    result = check_isolated(body, tmp_path, timeout=10)
    assert result["codes"][:1] == ["CT1019"], result  # type: ignore[index]
    assert result["carets"] and result["hints"]


def test_loops_nested_twenty_deep_are_ct1019(tmp_path: pathlib.Path) -> None:
    """Each loop is walked until its state settles (twice here), inner loops on every walk
    of the outer: 20 nested loops asked for 2^20 walks of the innermost body. The checker
    stops past 20,000 statement walks."""
    body = "i = block_id(0)\nj = 0\n"
    for d in range(20):
        body += "    " * d + f"for l{d} in range(3):\n"
    body += "    " * 20 + "j = i + j\n" + "    " * 20 + "i = j + 1\n"
    body += "z.store(load_tile_like(x, z))\n"
    result = check_isolated(body, tmp_path, timeout=10)
    assert result["codes"] == ["CT1019"] and result["carets"] and result["hints"]


def test_a_const_expression_that_doubles_at_each_line_checks_quickly(
        tmp_path: pathlib.Path) -> None:
    """The compile-time value of `c = c * 2 + c // 3` is a key naming its expression over
    the `Const`s: it doubled at each line (40 lines: 2^40 characters). Past 4,096 the
    checker reads it as a run-time value, and both branches of the test are checked."""
    body = ("c = C\n" + "c = c * 2 + c // 3\n" * 40
            + "if c == 3:\n    z.store(load_tile_like(x, z))\nelse:\n"
            "    z.store(load_tile_like(x, z) * 2.0)\n")
    result = check_isolated(body, tmp_path, timeout=10, params=PARAMS + ", C: Const[int]",
                            consts={"C": 1})
    assert result["codes"] == []
