"""Finding and running `tileiras` (bytecode -> cubin) and `tileirdisasm` (bytecode -> text).

Discovery order:
1. `$CUTILE_TILEIRAS` (a path to the binary): set explicitly, it wins over everything;
2. the pip wheels `nvidia-cuda-tileiras`, `nvidia-cuda-nvcc` and `nvidia-nvvm`, when all
   three are installed with one major.minor (tileiras runs the ptxas and libnvvm of the
   other two; mixing releases fails). The child then runs without CUDA_HOME/CUDA_PATH,
   which would make tileiras look for ptxas and libnvvm there instead;
3. `tileiras` on `PATH`;
4. `$CUDA_HOME/bin/tileiras`.

Failures become `CompileError`s carrying the tool's log and, when tileiras names one, the
Python source location (it prints the locations of our Debug section).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import log as _logging
from ..errors import CompileError, ConfigError
from .bytecode.version import BytecodeVersion, newest_common
from .stale import temp_prefix

_log = _logging.get("tileiras")

PIP_PACKAGES = ("nvidia-cuda-tileiras", "nvidia-cuda-nvcc", "nvidia-nvvm")
INSTALL_HINT = "install the assembler with `pip install 'cutile[tileiras]'`"
DEFAULT_TIMEOUT_S = 300.0
# A limit set around a block of compiles (`time_limit`: the autotuner's per-candidate
# `compile_timeout`), with what the error's hint should tell the user to raise
_LIMIT: ContextVar[tuple[float, str] | None] = ContextVar("cutile_tileiras_limit", default=None)


@dataclass(frozen=True)
class Tileiras:
    """One located assembler: where it is, how it was found, and the environment to run
    it in."""

    path: Path
    source: str  # "pip" | "CUTILE_TILEIRAS" | "PATH" | "CUDA_HOME"
    env: Mapping[str, str] = field(repr=False, compare=False)

    @property
    def disassembler(self) -> Path:
        return self.path.with_name("tileirdisasm")

    def run(
        self, args: list[str], *, timeout: float = 60.0, cwd: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_tool([str(self.path), *args], self.env, timeout=timeout, cwd=cwd)


def run_tool(
    argv: list[str], env: Mapping[str, str], *, timeout: float, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a tool in its own process group, and never leave it running without us: a
    timeout or any exception while waiting (Ctrl-C, SystemExit) kills the group (the tool
    and the ptxas it started), and a parent that dies without running Python code (SIGKILL,
    SIGTERM) takes the tool with it (`orphan_guard`). A tool that cannot be started (not an
    executable any more, a broken interpreter line) is a CompileError (CT7004)."""
    try:
        proc = subprocess.Popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=orphan_guard(),
        )
    except OSError as exc:
        raise CompileError(f"could not run {argv[0]}: {exc.strerror or exc}", code="CT7004",
                           hint="reinstall the `tileiras` extra, or point CUTILE_TILEIRAS "
                           "at a working tileiras") from exc
    with proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _kill_group(proc)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(argv, timeout, out, err) from exc
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_PR_SET_PDEATHSIG = 1


def orphan_guard() -> Callable[[], None] | None:
    """Linux: a function for the child, between fork and exec, that asks the kernel to
    SIGKILL it when its parent dies, so a killed compile leaves no tileiras running. (What
    tileiras started itself, ptxas, then finishes its file and exits; the temporary
    directory it wrote in is removed by the next process, `stale`.) None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def guard() -> None:
        # Only async-signal-safe work here: one syscall and a pid check.
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the guard was set
            os._exit(1)

    return guard


def _child_env(environ: Mapping[str, str], drop_cuda_home: bool) -> dict[str, str]:
    env = dict(environ)
    if drop_cuda_home:
        env.pop("CUDA_HOME", None)
        env.pop("CUDA_PATH", None)
    return env


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def find_pip_tileiras() -> Path | None:
    """The wheel's tileiras, if the three wheels agree on major.minor."""
    fast = _find_pip_tileiras_fast()
    if fast is None or isinstance(fast, Path):
        return fast
    from importlib import metadata  # the general route: slow to import (tens of ms)

    try:
        versions = {name: metadata.version(name) for name in PIP_PACKAGES}
    except metadata.PackageNotFoundError:
        return None
    if len({_major_minor(v) for v in versions.values()}) != 1:
        return None  # e.g. tileiras 13.5 with nvcc 13.4: tileiras would fail inside ptxas
    dist = metadata.distribution(PIP_PACKAGES[0])
    for file in dist.files or ():
        if file.name == "tileiras" and file.parent.name == "bin":
            path = Path(str(dist.locate_file(file)))
            if path.is_file() and os.access(path, os.X_OK):
                return path
    return None


def _find_pip_tileiras_fast() -> Path | Literal[False] | None:
    """The common layout, read from the directory: the `nvidia` namespace package holds
    `cu13/bin/tileiras`, and its site directory the three wheels' `.dist-info` folders,
    whose names carry the versions. `False` when the layout is not that one (the caller
    asks `importlib.metadata`), `None` when it is and the wheels disagree or are missing."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    for loc in spec.submodule_search_locations:
        site = Path(loc).parent
        try:
            names = os.listdir(site)
        except OSError:
            continue
        versions: dict[str, str] = {}
        for pkg in PIP_PACKAGES:
            prefix = pkg.replace("-", "_") + "-"
            found = [n for n in names if n.startswith(prefix) and n.endswith(".dist-info")]
            if len(found) != 1:
                break
            versions[pkg] = found[0][len(prefix):-len(".dist-info")]
        else:
            if len({_major_minor(v) for v in versions.values()}) != 1:
                return None
            for sub in sorted(Path(loc).glob("cu*/bin/tileiras")):
                if _executable(sub):
                    return sub
    return False


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_tileiras(environ: Mapping[str, str] | None = None, *, use_pip: bool = True) -> Tileiras:
    """Locate tileiras (see the module docstring for the order) or raise CompileError."""
    env = dict(os.environ if environ is None else environ)
    override = env.get("CUTILE_TILEIRAS")
    if override:
        path = Path(override).expanduser()
        if not _executable(path):
            raise CompileError(
                f"CUTILE_TILEIRAS={override} is not an executable file",
                code="CT7002",
                hint="point CUTILE_TILEIRAS at a tileiras binary, or unset it",
            )
        return Tileiras(path, "CUTILE_TILEIRAS", _child_env(env, drop_cuda_home=False))
    if use_pip:
        pip = find_pip_tileiras()
        if pip is not None:
            return Tileiras(pip, "pip", _child_env(env, drop_cuda_home=True))
    on_path = shutil.which("tileiras", path=env.get("PATH", ""))
    if on_path:
        return Tileiras(Path(on_path), "PATH", _child_env(env, drop_cuda_home=False))
    cuda_home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if cuda_home and _executable(Path(cuda_home) / "bin" / "tileiras"):
        path = Path(cuda_home) / "bin" / "tileiras"
        return Tileiras(path, "CUDA_HOME", _child_env(env, drop_cuda_home=False))
    raise CompileError(
        "no `tileiras` found (looked for the pip wheels, $CUTILE_TILEIRAS, PATH and "
        "$CUDA_HOME/bin)",
        code="CT7001",
        hint=INSTALL_HINT,
    )


# Keyed by the binary's identity on disk, so an upgraded assembler is asked again.
_version_cache: dict[tuple[Path, int, int], str] = {}


def tileiras_version(tool: Tileiras | None = None) -> str:
    """The `tileiras --version` line naming the release, e.g.
    `Cuda compilation tools, release 13.5, V13.5.37` (part of every cache key)."""
    tool = tool or find_tileiras()
    st = tool.path.stat()
    ident = (tool.path, st.st_mtime_ns, st.st_size)
    cached = _version_cache.get(ident)
    if cached is not None:
        return cached
    memo = _version_memo_path()
    key = f"{tool.path}|{st.st_mtime_ns}|{st.st_size}"
    remembered = _read_memo(memo).get(key) if memo else None
    if isinstance(remembered, str):  # a fresh process skips the subprocess (cached loads)
        _version_cache[ident] = remembered
        return remembered
    proc = _query(tool, "--version")
    if proc.returncode != 0:
        raise CompileError(
            f"`{tool.path} --version` failed", code="CT7003", log=proc.stdout + proc.stderr
        )
    lines = proc.stdout.strip().splitlines()
    release = [ln for ln in lines if "release" in ln]
    text = (release or lines or ["unknown"])[-1].strip()
    _version_cache[ident] = text
    if memo:
        _write_memo(memo, key, text)
    return text


def _query(tool: Tileiras, flag: str, timeout: float = 60.0
           ) -> subprocess.CompletedProcess[str]:
    """`tileiras FLAG`, a question that takes it milliseconds: one that hangs is a
    CompileError (CT7003), not a stuck or crashed process."""
    try:
        return tool.run([flag], timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"`{tool.path} {flag}` did not answer within {timeout:g} s",
                           code="CT7003", hint=INSTALL_HINT,
                           log=_text(exc.stdout) + _text(exc.stderr)) from exc


def _version_memo_path() -> Path | None:
    from .cache import cache_dir

    d = cache_dir()
    return d / "tileiras-versions.json" if d else None


def _read_memo(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_memo(path: Path, key: str, text: str) -> None:
    """Best effort, atomic: a lost or corrupt memo only costs one `tileiras --version`."""
    try:
        data = _read_memo(path)
        data[key] = text
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass


# (path, size, mtime) of an assembler -> the versions it listed (one run per process)
_listed: dict[tuple[str, int, int], list[str]] = {}


def list_versions(tool: Tileiras | None = None) -> list[str]:
    """Bytecode versions the assembler reads (`tileiras --list-versions`, 13.3+)."""
    tool = tool or find_tileiras()
    try:
        st = tool.path.stat()
        key: tuple[str, int, int] | None = (str(tool.path), st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _listed:
        return list(_listed[key])
    proc = _query(tool, "--list-versions")
    if proc.returncode != 0:
        raise CompileError(
            f"`{tool.path} --list-versions` failed (tileiras older than 13.3?)",
            code="CT7003",
            hint=INSTALL_HINT,
            log=proc.stdout + proc.stderr,
        )
    listed = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    if key is not None:
        _listed[key] = listed
    return list(listed)


def require_version(version: BytecodeVersion, what: str, remedy: str | None = None,
                    tool: Tileiras | None = None) -> None:
    """Refuse (CT7007) to compile bytecode `version` for an assembler that cannot read it,
    before it fails on it with a less helpful message. `what` says why the kernel needs
    that version, `remedy` how to do without it. Never a silent fallback to another
    version: the kernel would not be the one asked for."""
    tool = tool or find_tileiras()
    newest = max_supported_version(tool)
    if newest >= version:
        return
    raise CompileError(
        f"{what} needs Tile IR bytecode {version}, and the assembler {tool.path} reads "
        f"versions up to {newest}",
        code="CT7007",
        hint=f"install tileiras {version} or newer (`pip install 'cutile[tileiras]'` gets "
             "the newest)" + (f", or {remedy}" if remedy else ""),
    )


def max_supported_version(tool: Tileiras | None = None) -> BytecodeVersion:
    """The newest bytecode version both this writer and the assembler know."""
    try:
        return newest_common(list_versions(tool))
    except ValueError as exc:
        raise CompileError(str(exc), code="CT7003", hint=INSTALL_HINT) from exc


# -- running the assembler ---------------------------------------------------------------

# `loc("file.py":12:5): error: msg` and `#cuda_tile.di_loc<loc("file.py":12:5) in ...>: error:`
_LOC_ERROR = re.compile(
    r'loc\("(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)\).*?error:\s*(?P<msg>.*)'
)
# rustc-style diagnostics: `error[...]: msg` then `  --> "file.py":12:5`
_ARROW = re.compile(r'-->\s*"?(?P<file>[^":]+)"?:(?P<line>\d+):(?P<col>\d+)')
_ERROR = re.compile(r"^\s*error(?:\[[^\]]*\])?:\s*(?P<msg>.*)")


def parse_diagnostics(log: str) -> tuple[str, str | None]:
    """(first error message, first Python location `file:line:col` near an error)."""
    message: str | None = None
    location: str | None = None
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _LOC_ERROR.search(line)
        if m:
            message = message or m["msg"].strip()
            location = location or f"{m['file']}:{m['line']}:{m['col']}"
            continue
        e = _ERROR.match(line)
        if e:
            message = message or e["msg"].strip()
            # A rustc-style error names its location on one of the next lines.
            for follow in lines[i + 1 : i + 4]:
                a = _ARROW.search(follow)
                if a:
                    location = location or f"{a['file']}:{a['line']}:{a['col']}"
                    break
    return message or (lines[0] if lines else "tileiras failed"), location


def _timeout_from_env(environ: Mapping[str, str]) -> float:
    raw = environ.get("CUTILE_TILEIRAS_TIMEOUT")
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0:  # also catches nan
        raise ConfigError(
            f"CUTILE_TILEIRAS_TIMEOUT={raw!r} is not a number of seconds above 0",
            code="CT8006",
            hint=f"e.g. CUTILE_TILEIRAS_TIMEOUT=600, or unset it for {DEFAULT_TIMEOUT_S:g} s",
        )
    return value


@contextmanager
def time_limit(seconds: float | None, raise_with: str) -> Iterator[None]:
    """Every `assemble` in this block (this thread or task) without a timeout of its own
    stops tileiras after `seconds` (None: the usual limit) and, if it does, says to raise
    `raise_with`. Some tile shapes keep tileiras busy for minutes (`cutile explain CT7005`):
    an autotuner skips such a candidate after its own limit instead."""
    token = _LIMIT.set(None if seconds is None else (seconds, raise_with))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def assemble(
    bytecode: bytes,
    arch: str = "sm_90",
    opt_level: int = 3,
    *,
    tool: Tileiras | None = None,
    timeout: float | None = None,
    extra_args: tuple[str, ...] = (),
) -> bytes:
    """Run `tileiras --gpu-name ARCH -O N in.tilebc -o out.cubin` in a temporary
    directory and return the cubin."""
    tool = tool or find_tileiras()
    raise_with = "CUTILE_TILEIRAS_TIMEOUT"
    if timeout is None:
        limit = _LIMIT.get()
        timeout, raise_with = limit or (_timeout_from_env(os.environ), raise_with)
    with tempfile.TemporaryDirectory(prefix=temp_prefix("tileiras")) as tmp:
        src = Path(tmp) / "kernel.tilebc"
        out = Path(tmp) / "kernel.cubin"
        src.write_bytes(bytecode)
        args = ["--gpu-name", arch, f"-O{opt_level}", str(src), "-o", str(out), *extra_args]
        _log.debug("$ %s", shlex.join([str(tool.path), *args]))
        start = time.perf_counter()
        try:
            proc = tool.run(args, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired as exc:
            raise CompileError(
                f"tileiras did not finish within {timeout:g} s",
                code="CT7005",
                hint=f"smaller tiles compile faster; {raise_with} raises the limit",
                log=_text(exc.stdout) + _text(exc.stderr),
            ) from exc
        log = proc.stdout + proc.stderr
        _log.debug("tileiras exited %d after %.3f s", proc.returncode,
                   time.perf_counter() - start)
        if proc.returncode != 0:
            message, location = parse_diagnostics(proc.stderr or proc.stdout)
            raise CompileError(
                f"tileiras rejected the kernel for {arch}: {message}",
                code="CT7004",
                location=location,
                log=f"$ {tool.path.name} {' '.join(args)}\n{log}",
            )
        if not out.is_file() or out.stat().st_size == 0:
            raise CompileError("tileiras exited 0 but wrote no cubin", code="CT7004", log=log)
        return out.read_bytes()


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def disassemble(bytecode: bytes, *, tool: Tileiras | None = None, debug_info: bool = False) -> str:
    """`tileirdisasm` text of bytecode (ships with tileiras 13.4+)."""
    tool = tool or find_tileiras()
    disasm = tool.disassembler
    if not _executable(disasm):
        raise CompileError(
            f"no tileirdisasm next to {tool.path}",
            code="CT7006",
            hint="tileirdisasm ships with nvidia-cuda-tileiras 13.4 and newer",
        )
    with tempfile.TemporaryDirectory(prefix=temp_prefix("disasm")) as tmp:
        src = Path(tmp) / "kernel.tilebc"
        src.write_bytes(bytecode)
        args = [str(disasm), *(["-g"] if debug_info else []), str(src)]
        try:
            proc = run_tool(args, tool.env, timeout=60)
        except subprocess.TimeoutExpired as exc:
            raise CompileError("tileirdisasm did not finish within 60 s", code="CT7005",
                               log=_text(exc.stdout) + _text(exc.stderr)) from exc
    if proc.returncode != 0:
        message, location = parse_diagnostics(proc.stderr)
        raise CompileError(
            f"tileirdisasm could not read the bytecode: {message}",
            code="CT7004",
            location=location,
            log=proc.stderr,
        )
    return proc.stdout
