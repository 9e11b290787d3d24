"""`check`, `compile` and `explain`: what each does with its parsed arguments. Each returns
the exit code; a usage mistake raises ConfigError, which `cli.main` turns into exit 2."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import ConfigError, CutileError, KernelCheckError
from . import loading


def cmd_check(args: argparse.Namespace) -> int:
    for path in args.files:  # every path first: a typo should not wait for the other files
        loading.existing_file(path)
    failures = 0
    total = 0
    for path in args.files:
        try:
            mod = loading.load(path)
        except ConfigError as err:
            print(f"{path}: {err}", file=sys.stderr)
            failures += 1
            continue
        for k in loading.kernels(mod):
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


def parse_define(text: str) -> tuple[str, int | float | bool]:
    """`-D NAME=VALUE`: VALUE is an integer, a float, True or False (CT8012 otherwise)."""
    name, eq, raw = text.partition("=")
    name = name.strip()
    if not eq or not name.isidentifier():
        raise ConfigError(f"-D {text}: expected NAME=VALUE", code="CT8012",
                          hint="e.g. -D B=128 (one -D per Const parameter)")
    raw = raw.strip()
    if raw in ("True", "False"):
        return name, raw == "True"
    for parse in (int, lambda s: int(s, 0), float):  # 128, 0x80, 0.5
        try:
            value: int | float = parse(raw)
        except ValueError:
            continue
        return name, value
    raise ConfigError(
        f"-D {text}: `{raw}` is not an integer, a float, True or False",
        code="CT8012",
        hint=f"a Const value is a number, e.g. -D {name}=128",
    )


def _consts_for(kernel: Any, defines: list[str]) -> dict[str, int | float | bool]:
    consts: dict[str, int | float | bool] = {}
    for text in defines:
        name, value = parse_define(text)
        if name in consts:
            raise ConfigError(f"-D {name} given twice", code="CT8013")
        consts[name] = value
    wanted = [p.name for p in kernel.entry.params if p.kind == "const"]
    listed = ", ".join(f"`{n}`" for n in wanted) or "none"
    for name in consts:
        if name not in wanted:
            raise ConfigError(f"`{kernel.name}` has no Const parameter `{name}`", code="CT8013",
                              hint=f"its Const parameters: {listed}")
    missing = [n for n in wanted if n not in consts]
    if missing:
        raise ConfigError(
            f"`{kernel.name}` needs a value for `{missing[0]}`",
            code="CT8013",
            hint=" ".join(f"-D {n}=..." for n in missing),
        )
    return consts


def write_output(path: str, data: bytes) -> None:
    """Write atomically (a temporary file renamed into place): a failed write never leaves
    a truncated file where a good one was. An unwritable place is CT8014."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                   dir=target.parent if str(target.parent) else ".")
    except OSError as exc:
        raise ConfigError(f"cannot write -o {path}: {exc.strerror or exc}", code="CT8014",
                          hint="name a file in a directory that exists and is writable") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ConfigError(f"cannot write -o {path}: {exc.strerror or exc}", code="CT8014",
                          hint="name a file in a directory that exists and is writable") from None


def cmd_compile(args: argparse.Namespace) -> int:
    mod = loading.load(args.file)
    kernels = {k.name: k for k in loading.kernels(mod)}
    if args.kernel not in kernels:
        found = ", ".join(f"`{n}`" for n in kernels) or "none"
        raise ConfigError(f"no kernel `{args.kernel}` in {args.file}", code="CT8015",
                          hint=f"kernels in the file: {found}")
    kernel = kernels[args.kernel]
    consts = _consts_for(kernel, args.define)
    compiled = kernel.compile(target=args.target, **consts)
    if args.output:
        write_output(args.output, compiled.cubin)
    if args.ir:
        print(compiled.ir_text())
    print(f"{args.kernel}: {len(compiled.bytecode)} B bytecode -> {len(compiled.cubin)} B "
          f"{args.target} cubin ({compiled.from_cache or 'compiled'})")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from ..error_codes import all_codes, explain

    if args.code is None:
        for code, summary in all_codes().items():
            print(f"{code}  {summary}")
        return 0
    text = explain(args.code)
    if text is None:
        raise ConfigError(f"unknown error code {args.code}", code="CT8016",
                          hint="`python -m cutile explain` lists every code")
    print(text)
    return 0
