"""The SASS of benchmarks/norms.py's Triton peers for sm_90, without a GPU, to compare with
cutile's (`tests/kernels/test_example_sass.py` `sass_of`). Run with a Python that has
Triton (not cutile); cuobjdump and nvdisasm on PATH. Pointers and integer arguments get
Triton's divisibility-by-16 specialization, as at launch on 16-byte aligned tensors whose
row length is a multiple of 16 (without it Triton loads 2 bytes at a time).

    python benchmarks/norms_triton_sass.py OUTDIR [softmax:4096 rmsnorm:1024 ...]
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget


def triton_kernels() -> dict:
    """norms.py's `triton_kernels`, its source alone in a module of its own (norms.py imports
    cutile; Triton's `jit` reads the source from a file)."""
    path = Path(__file__).resolve().parent / "norms.py"
    text = path.read_text()
    fn = next(n for n in ast.parse(text).body
              if isinstance(n, ast.FunctionDef) and n.name == "triton_kernels")
    src = "from typing import Any\n\n" + ast.get_source_segment(text, fn) + "\n"
    tmp = Path(tempfile.mkdtemp()) / "norms_triton_peers.py"
    tmp.write_text(src)
    spec = importlib.util.spec_from_file_location("norms_triton_peers", tmp)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.triton_kernels()


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    kernels = triton_kernels()
    args = {"softmax": ["x", "y"], "rmsnorm": ["x", "w", "y"], "layernorm": ["x", "w", "b", "y"]}
    for case in sys.argv[2:] or ["softmax:4096", "rmsnorm:1024", "layernorm:1024"]:
        op, cols = case.split(":")
        block = 1 << max(0, int(cols) - 1).bit_length()
        warps = 4 if block <= 1024 else 8 if block <= 4096 else 16   # as triton_call
        sig = {a: "*bf16" for a in args[op]} | {"stride": "i32", "n": "i32"}
        if op != "softmax":
            sig["eps"] = "fp32"
        sig["BLOCK"] = "constexpr"
        attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(sig.values())
                 if t in ("*bf16", "i32")}
        src = triton.compiler.ASTSource(fn=kernels[op], signature=sig,
                                        constexprs={"BLOCK": block}, attrs=attrs)
        compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                  options={"num_warps": warps})
        cubin = out / f"triton_{op}_{block}.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True,
                              text=True, check=True).stdout
        cubin.with_suffix(".sass").write_text(sass)
        print(f"{op} {block}: {warps} warps -> {cubin.with_suffix('.sass')}")


if __name__ == "__main__":
    main()
