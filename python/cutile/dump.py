"""Named dump stages: `CUTILE_DUMP=kast,facts,ir,bytecode,cubin,sass` (or `all`) writes
each stage of every kernel cutile compiles to `CUTILE_DUMP_DIR` (default `cutile-dump/` in
the working directory), one file per stage and specialization:

    <kernel>.<hash>.kast.json   the kernel AST the checker read (docs/kernel-ast.md)
    <kernel>.<hash>.facts.json  what the checker proved: every obligation and how it was
                                discharged, the launch kind of each output, and the
                                specialization (Const values, argument facts)
    <kernel>.<hash>.ir.txt      the Tile IR the lowering made
    <kernel>.<hash>.tilebc      the bytecode tileiras reads
    <kernel>.<hash>.cubin       what tileiras made of it
    <kernel>.<hash>.sass        the cubin's machine code (`cuobjdump -sass`; skipped, with a
                                logged note, when cuobjdump is not installed)

`<hash>` names one specialization (the kernel's AST and its Const values and argument facts),
so the files of one compile sort together. On the interpreter, nothing is assembled: the
bytecode is still written, the cubin and SASS are skipped with a logged note. An unknown
stage is a ConfigError (CT8005). Writing is best effort after that: a dump that cannot be
written is logged, never a reason for a kernel to fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import environment, log
from .errors import ConfigError

STAGES = ("kast", "facts", "ir", "bytecode", "cubin", "sass")
SUFFIX = {"kast": "kast.json", "facts": "facts.json", "ir": "ir.txt", "bytecode": "tilebc",
          "cubin": "cubin", "sass": "sass"}
_log = log.get("dump")


def requested(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The stages CUTILE_DUMP asks for (empty when unset)."""
    raw = environment.get("CUTILE_DUMP", environ) or ""
    names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    if "all" in names:
        return frozenset(STAGES)
    unknown = [n for n in names if n not in STAGES]
    if unknown:
        listed = ", ".join(f"`{s}`" for s in STAGES)
        raise ConfigError(
            f"CUTILE_DUMP names an unknown stage `{unknown[0]}`",
            code="CT8005",
            hint=f"the stages are {listed} (comma-separated), or `all`",
        )
    return frozenset(names)


def directory(environ: Mapping[str, str] | None = None) -> Path:
    configured = environment.get("CUTILE_DUMP_DIR", environ)
    return Path(configured).expanduser() if configured else Path.cwd() / "cutile-dump"


def stem(identity: Mapping[str, Any]) -> str:
    """`<kernel>.<hash>`: the common start of one specialization's files."""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return f"{identity['name']}.{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _write(identity: Mapping[str, Any], stage: str, data: bytes | str) -> None:
    path = directory() / f"{stem(identity)}.{SUFFIX[stage]}"
    payload = data.encode() if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
    except OSError as exc:
        _log.warning("cannot write the %s dump %s: %s", stage, path, exc.strerror or exc)
        return
    _log.info("dumped %s to %s", stage, path)


def facts_json(identity: Mapping[str, Any], result: Any) -> str:
    """The checker's verdict as JSON (`cutile._native.CheckResult`)."""
    obligations = [
        {"kind": o.kind, "description": o.description, "discharged": o.discharged,
         "predicate": o.predicate, "at": f"{o.span.file}:{o.span.line}:{o.span.col + 1}",
         "node_path": list(o.node_path), "nid": o.nid}
        for o in result.obligations
    ]
    return json.dumps({
        "kernel": identity["name"],
        "specialization": {k: v for k, v in identity.items() if k != "name"},
        "accepted": bool(result.ok),
        "outputs": [{"param": p, "launch": kind} for p, kind in result.outputs],
        "grid_rank": result.grid_rank,
        "index_width": result.index_width,
        "obligations": obligations,
        "device_checks": [[list(p), n] for p, n in result.device_checks],
        "checked_nodes": [[list(p), n] for p, n in result.checked_nodes],
        "folded_branches": [[list(p), n, b] for p, n, b in result.folded_branches],
    }, indent=2) + "\n"


def after_lowering(identity: Mapping[str, Any], kast_json: Callable[[], str],
                   check_result: Any, lowered: Any) -> None:
    """The front stages of one specialization: what was checked and what was lowered
    (the kernel AST encoded only if it is dumped)."""
    stages = requested()
    if not stages:
        return
    if "kast" in stages:
        _write(identity, "kast", json.dumps(json.loads(kast_json()), indent=2) + "\n")
    if "facts" in stages:
        _write(identity, "facts", facts_json(identity, check_result))
    if "ir" in stages:
        from .ir import print_module

        _write(identity, "ir", print_module(lowered.module))


def after_assembly(identity: Mapping[str, Any] | None, bytecode: bytes,
                   cubin: bytes | None, tool: Any = None) -> None:
    """The back stages: bytecode, and (when it was assembled) cubin and SASS."""
    stages = requested()
    if not stages or identity is None:
        return
    if "bytecode" in stages:
        _write(identity, "bytecode", bytecode)
    if cubin is None:
        if stages & {"cubin", "sass"}:
            _log.info("no cubin or sass dump for `%s`: it runs on the CPU interpreter, which "
                      "does not assemble", identity["name"])
        return
    if "cubin" in stages:
        _write(identity, "cubin", cubin)
    if "sass" in stages:
        text = sass(cubin, tool)
        if text is not None:
            _write(identity, "sass", text)


def interpreted(identity: Mapping[str, Any], lowered: Any) -> None:
    """A kernel that runs on the interpreter: its bytecode is still written (it is what a
    GPU would get); cubin and SASS are noted as skipped."""
    if requested() & {"bytecode", "cubin", "sass"}:
        from .backend.bytecode import write_bytecode

        after_assembly(identity, write_bytecode(lowered.module), None)


def find_cuobjdump(tool: Any = None) -> Path | None:
    """cuobjdump (with the nvdisasm it runs): beside tileiras (the pip wheels put them in
    one directory), else on PATH."""
    if tool is None:
        from .backend.tileiras import find_tileiras
        from .errors import CompileError

        try:
            tool = find_tileiras()
        except CompileError:
            pass
    if tool is not None:
        beside = Path(tool.path).with_name("cuobjdump")
        if beside.is_file() and beside.with_name("nvdisasm").is_file():
            return beside
    found = shutil.which("cuobjdump")
    return Path(found) if found and shutil.which("nvdisasm") else None


def sass(cubin: bytes, tool: Any = None) -> str | None:
    """`cuobjdump -sass` of a cubin; None (and a logged note) when it cannot be had."""
    return _cuobjdump(cubin, ["-sass"], tool)


@dataclass(frozen=True)
class Resources:
    """What one block of a kernel takes from a multiprocessor, as the cubin says
    (`cuobjdump -res-usage -elf`): registers per thread, static shared memory and local
    memory (spills) in bytes, and threads per block (`REQNTID`)."""

    registers: int
    shared: int
    local: int
    threads: int

    def blocks_per_sm(self) -> int:
        """How many blocks fit on one Hopper (sm_90) multiprocessor: 64K registers
        (allocated per warp in units of 256), 2048 threads, 32 blocks, 228 KB of shared
        memory with 1 KB reserved per block (in units of 128 bytes)."""
        warps = -(-self.threads // 32)
        per_warp = -(-self.registers * 32 // 256) * 256
        by_regs = 65536 // (per_warp * warps) if per_warp else 32
        smem = -(-(self.shared + 1024) // 128) * 128
        return min(32, 2048 // max(1, self.threads), by_regs, 233472 // smem)


def resources(cubin: bytes, tool: Any = None) -> Resources | None:
    """The resource usage of the cubin's (one) kernel; None without cuobjdump."""
    text = _cuobjdump(cubin, ["-res-usage", "-elf"], tool)
    if text is None:
        return None
    use = re.search(r"REG:(\d+) STACK:\d+ SHARED:(\d+) LOCAL:(\d+)", text)
    ntid = re.search(r"EIATTR_REQNTID\s+Format:\s+\S+\s+Value:\s+(\w+) (\w+) (\w+)", text)
    if use is None or ntid is None:
        _log.info("no resource usage in cuobjdump's output")
        return None
    threads = 1
    for dim in ntid.groups():
        threads *= int(dim, 0)
    return Resources(int(use[1]), int(use[2]), int(use[3]), threads)


def _cuobjdump(cubin: bytes, flags: list[str], tool: Any = None) -> str | None:
    dump = find_cuobjdump(tool)
    if dump is None:
        _log.info("no sass dump: cuobjdump and nvdisasm are not installed "
                  "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
        return None
    env = dict(os.environ, PATH=f"{dump.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    from .backend.stale import temp_prefix

    with tempfile.TemporaryDirectory(prefix=temp_prefix("dump")) as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        try:
            proc = subprocess.run([str(dump), *flags, str(path)], capture_output=True,
                                  text=True, env=env, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _log.info("no sass dump: %s failed (%s)", dump, exc)
            return None
    if proc.returncode != 0:
        _log.info("no sass dump: %s exited %d: %s", dump, proc.returncode, proc.stderr.strip())
        return None
    return proc.stdout
