"""The command line, `python -m cutile` (or `cutile`): `check`, `compile`, `info`,
`explain`, `cache`.

Exit codes: 0 success; 1 what was checked or compiled is wrong (a kernel the checker rejects,
a file that does not import, tileiras refusing a kernel); 2 the command was used wrongly (a
missing file, a malformed `-D`, an unwritable `-o`, an environment variable cutile cannot
use: a ConfigError, printed with its code and hint); 3 a bug in cutile (one line and where
to report it; `CUTILE_LOG=debug` adds the traceback); 130 interrupted. Output into a closed
pipe (`python -m cutile explain | head`) ends quietly, with 141 like a tool SIGPIPE ended."""

from __future__ import annotations

import argparse
import os
import sys

from .. import log
from ..errors import ConfigError, CutileError

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a tool killed by the signal reports
REPORT_URL = "the cutile issue tracker"


def build_parser() -> argparse.ArgumentParser:
    from .cache import add_cache_parser
    from .commands import cmd_check, cmd_compile, cmd_explain
    from .info import cmd_info

    parser = argparse.ArgumentParser(prog="python -m cutile")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_check = sub.add_parser("check", help="check every kernel in the files (no GPU needed)")
    p_check.add_argument("files", nargs="+")
    p_check.add_argument("-v", "--verbose", action="store_true")
    p_check.set_defaults(fn=cmd_check)
    p_info = sub.add_parser("info", help="backend, GPU, tileiras, cache, environment")
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
    add_cache_parser(sub)
    return parser


def _print_error(err: CutileError) -> None:
    if isinstance(err, ConfigError):
        text = f"error[{err.code}]: {err.message}"
        if err.hint:
            text += f"\n  help: {err.hint}"
        if err.__cause__ is not None:
            log.get("cli").debug("caused by", exc_info=err.__cause__)
    else:
        text = str(err)
    print(text, file=sys.stderr)


def _quiet_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush does not
    print a second BrokenPipeError on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _internal_error(exc: BaseException) -> int:
    import cutile

    log.get("cli").debug("internal error", exc_info=exc)
    first = (str(exc).strip().splitlines() or [""])[0]
    print(f"cutile: internal error: {type(exc).__name__}: {first}\n"
          f"please report this (cutile {cutile.__version__}, python "
          f"{sys.version.split()[0]}) to {REPORT_URL}, with the command you ran; "
          f"CUTILE_LOG=debug shows the traceback", file=sys.stderr)
    return EXIT_INTERNAL


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # argparse itself exits 2 on bad usage
    try:
        code: int = args.fn(args)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at exit
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except ConfigError as err:
        _print_error(err)
        return EXIT_USAGE
    except CutileError as err:
        _print_error(err)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("cutile: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        return _internal_error(exc)

