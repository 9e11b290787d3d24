"""Command line: `python -m cutile check FILE.py ...`, `python -m cutile info`,
`python -m cutile compile FILE.py --kernel NAME -D B=128 [-o out.cubin] [--ir]`."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import CutileError, KernelCheckError


def _load(path: str) -> ModuleType:
    p = Path(path).resolve()
    name = "_cutile_cli_" + p.stem
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise CutileError(f"cannot import {path}", code="CT0004")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(p.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(p.parent))
    return mod


def _kernels(mod: ModuleType) -> list[Any]:
    from .kernel import EntryKernel

    seen: list[Any] = []
    for value in vars(mod).values():
        if isinstance(value, EntryKernel) and value.fn.__module__ == mod.__name__:
            if value not in seen:
                seen.append(value)
    return seen


def cmd_check(args: argparse.Namespace) -> int:
    failures = 0
    total = 0
    for path in args.files:
        try:
            mod = _load(path)
        except Exception as exc:
            print(f"{path}: cannot import: {type(exc).__name__}: {exc}", file=sys.stderr)
            failures += 1
            continue
        for k in _kernels(mod):
            total += 1
            try:
                k.check()
                if args.verbose:
                    print(f"{path}: `{k.name}` ok")
            except KernelCheckError as err:
                failures += 1
                print(err.rendered, file=sys.stderr)
            except CutileError as err:
                failures += 1
                print(f"{path}: `{k.name}`: {err}", file=sys.stderr)
    status = "ok" if failures == 0 else f"{failures} failed"
    print(f"cutile check: {total} kernel(s) in {len(args.files)} file(s): {status}")
    return 1 if failures else 0


def _parse_const(text: str) -> tuple[str, int | float | bool]:
    if "=" not in text:
        raise SystemExit(f"-D expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    value: int | float | bool
    if raw in ("True", "False"):
        value = raw == "True"
    else:
        try:
            value = int(raw)
        except ValueError:
            value = float(raw)
    return name, value


def cmd_compile(args: argparse.Namespace) -> int:
    mod = _load(args.file)
    kernels = {k.name: k for k in _kernels(mod)}
    if args.kernel not in kernels:
        print(f"no kernel `{args.kernel}` in {args.file} (found: {', '.join(kernels)})",
              file=sys.stderr)
        return 2
    consts = dict(_parse_const(c) for c in args.define)
    try:
        compiled = kernels[args.kernel].compile(target=args.target, **consts)
    except CutileError as err:
        print(err, file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_bytes(compiled.cubin)
    if args.ir:
        print(compiled.ir_text())
    print(f"{args.kernel}: {len(compiled.bytecode)} B bytecode -> {len(compiled.cubin)} B "
          f"{args.target} cubin ({compiled.from_cache or 'compiled'})")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from .runtime import driver

    s = driver.state()
    print(f"cutile {__import__('cutile').__version__}")
    print(f"python {sys.version.split()[0]}")
    if s.backend == "gpu":
        major, minor = s.driver_version // 1000, (s.driver_version % 1000) // 10
        print(f"driver: CUDA {major}.{minor}")
        print(f"gpu: {s.name} (sm_{s.cc[0]}{s.cc[1]}, {s.sm_count} SMs)")
    else:
        print(f"driver: none ({s.reason}); kernels run on the CPU interpreter")
    try:
        from .backend import tileiras

        tool = tileiras.find_tileiras()
        print(f"tileiras: {tool}")
        print(f"bytecode versions: {', '.join(tileiras.list_versions(tool))}")
    except Exception as exc:  # report, never crash: this is a diagnostic command
        print(f"tileiras: not found ({exc})")
    try:
        from .backend import cache

        print(f"cache: {cache.cache_dir() or 'disabled'}")
    except Exception as exc:
        print(f"cache: unknown ({exc})")
    print(f"CUTILE_BACKEND={os.environ.get('CUTILE_BACKEND', '')}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from .error_codes import all_codes, explain

    if args.code is None:
        for code, summary in all_codes().items():
            print(f"{code}  {summary}")
        return 0
    text = explain(args.code)
    if text is None:
        print(f"unknown error code {args.code}", file=sys.stderr)
        return 2
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cutile")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_check = sub.add_parser("check", help="check every kernel in the files (no GPU needed)")
    p_check.add_argument("files", nargs="+")
    p_check.add_argument("-v", "--verbose", action="store_true")
    p_check.set_defaults(fn=cmd_check)
    p_info = sub.add_parser("info", help="driver, GPUs, tileiras, bytecode versions, cache")
    p_info.set_defaults(fn=cmd_info)
    p_comp = sub.add_parser("compile", help="assemble one kernel to a cubin")
    p_comp.add_argument("file")
    p_comp.add_argument("--kernel", "-k", required=True)
    p_comp.add_argument("--target", default="sm_90")
    p_comp.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE")
    p_comp.add_argument("-o", "--output")
    p_comp.add_argument("--ir", action="store_true", help="print the tileirdisasm text")
    p_comp.set_defaults(fn=cmd_compile)
    p_explain = sub.add_parser("explain", help="what an error code means (all codes without one)")
    p_explain.add_argument("code", nargs="?")
    p_explain.set_defaults(fn=cmd_explain)
    args = parser.parse_args(argv)
    code: int = args.fn(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
