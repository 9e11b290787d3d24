"""The compile pipeline, stage by stage:

    source --frontend--> kernel AST --Rust checker--> (accepted)
           --lowering (Const values, argument facts)--> Tile IR module --verify-->
           --bytecode writer--> .tilebc --tileiras (disk cache)--> cubin

Each stage is a plain function; `kernel.py` caches their results per kernel and per
specialization so that a launch never repeats work.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import dump, log
from .errors import KernelCheckError
from .frontend import kast as K
from .frontend.diagnostics import FrontendError, to_check_error

if TYPE_CHECKING:
    # The lowering, the IR and the bytecode writer are imported by the stages that use
    # them: a kernel loaded from the launch cache never does (`backend/launch_cache.py`).
    from .lowering.facts import LoweringFacts
    from .lowering.lower import LoweredKernel
    from .lowering.signature import Specialization


def run_checker(doc: K.Document, raise_errors: bool = True) -> Any:
    """The Rust checker on the serialized kernel AST; raises KernelCheckError on violations
    (unless `raise_errors` is off: tests that replay rejected kernels)."""
    from . import _native

    start = time.perf_counter()
    result = _native.check_kernel(doc.to_json())
    _log_check(doc, result, time.perf_counter() - start)
    if not result.ok and raise_errors:
        raise KernelCheckError(result.rendered(), list(result.diagnostics), result=result)
    if raise_errors:
        # What the compiler cannot emit is found here too, before any Const is known.
        from .lowering.support import check_support

        try:
            check_support(doc)
        except FrontendError as err:
            raise to_check_error(doc.files, err) from None
    return result


def _log_check(doc: K.Document, result: Any, seconds: float) -> None:
    logger = log.get("check")
    if not logger.isEnabledFor(logging.INFO):
        return
    names = f"`{doc.entry}`"
    if result.ok:
        how = Counter(str(o.discharged) for o in result.obligations)
        detail = ", ".join(f"{n} {kind}" for kind, n in sorted(how.items())) or "none"
        logger.info("checked %s in %.1f ms: accepted; obligations: %s", names,
                    seconds * 1e3, detail)
    else:
        codes = ", ".join(sorted({str(d.code) for d in result.diagnostics}))
        logger.info("checked %s in %.1f ms: rejected (%s)", names, seconds * 1e3, codes)


def lower(doc: K.Document, spec: Specialization, facts: LoweringFacts | None,
          pdl: bool = False, pdl_early: tuple[str, ...] = (),
          fp_contract: bool = False, pdl_trigger_first: bool = False) -> LoweredKernel:
    """Lower with the checker's `facts` (None only where a test compiles without the
    checker); `pdl`: with the programmatic-dependent-launch prologue (`lowering/pdl.py`),
    and loads of the `pdl_early` parameters ahead of its wait where they come first (the
    launch of dependents first of all with `pdl_trigger_first`);
    `fp_contract`: products fused into the adds that use them (`lowering/contract.py`)."""
    from .lowering.contract import contract_module
    from .lowering.lower import lower_kernel

    try:
        lowered = lower_kernel(doc, spec, facts, pdl, pdl_early, pdl_trigger_first)
    except FrontendError as err:
        raise to_check_error(doc.files, err) from None
    if fp_contract:
        contract_module(lowered.module)
    _verify(lowered)
    return lowered


def _verify(lowered: LoweredKernel) -> None:
    try:
        from .ir.verify import verify
    except ImportError:  # pragma: no cover - the verifier ships with the package
        return
    verify(lowered.module)


@dataclass
class CompiledKernel:
    """What `kernel.compile(...)` returns: the IR, its bytecode and the sm_XY cubin."""

    name: str
    target: str
    lowered: LoweredKernel
    bytecode: bytes
    cubin: bytes
    from_cache: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def module(self) -> Any:
        return self.lowered.module

    @property
    def pdl(self) -> bool:
        """Compiled with the programmatic-dependent-launch prologue (`lowering/pdl.py`)."""
        return bool(self.lowered.pdl)

    def ir_text(self) -> str:
        """The bytecode disassembled by `tileirdisasm` (what tileiras reads)."""
        from .backend.tileiras import disassemble

        return str(disassemble(self.bytecode))


def kast_sha256(doc: K.Document) -> str:
    """The hash of a kernel's AST: its source, the device functions it calls, its options."""
    return hashlib.sha256(doc.to_json().encode()).hexdigest()


def kernel_identity(name: str, kast_hash: str, spec: Specialization,
                    hints: dict[str, dict[str, int]] | None = None, opt_level: int = 3,
                    pdl: bool = False, pdl_early: tuple[str, ...] = (),
                    fp_contract: bool = False, unchecked: bool = False,
                    pdl_trigger_first: bool = False) -> dict[str, Any]:
    """What a compiled kernel is, besides its bytecode: part of its cache key (so a cache
    entry can prove it is this kernel's, `backend.cache_entry`) and of its dump names.
    `unchecked`: lowered without the checker's facts (no device asserts; tests only), so
    never the same entry as the checked kernel of the same AST."""
    return {
        "name": name,
        "kast_sha256": kast_hash,
        "consts": [[name, value] for name, value in spec.consts],
        "tensors": [
            [name, {"dtype": f.dtype, "rank": f.rank, "base_align16": f.base_align16,
                    "last_stride_one": f.last_stride_one, "shape_div": list(f.shape_div),
                    "stride_div": list(f.stride_div)}]
            for name, f in spec.tensors
        ],
        "index_bits": spec.index_bits,
        "hints": hints or {},
        "opt_level": opt_level,
        "pdl": pdl,
        **({"pdl_early": list(pdl_early)} if pdl and pdl_early else {}),
        **({"pdl_trigger_first": True} if pdl and pdl_trigger_first else {}),
        **({"fp_contract": True} if fp_contract else {}),
        **({"unchecked": True} if unchecked else {}),
    }


def assemble(lowered: LoweredKernel, target: str, opt_level: int = 3,
             identity: dict[str, Any] | None = None) -> CompiledKernel:
    """Bytecode and cubin of a lowered kernel; `identity` (`kernel_identity`) goes into
    the cache key."""
    from .backend.bytecode import needed_version, write_bytecode
    from .backend.cache import cache_dir, compile_cubin

    t0 = time.perf_counter()
    # The default version (13.3) unless an op needs a later one (a PDL kernel's grid-
    # dependency ops: 13.4), and then only if the assembler reads it (CT7007).
    version, newer_op = needed_version(lowered.module)
    if newer_op is not None:
        from .backend.tileiras import require_version

        remedy = ("compile it without programmatic dependent launch "
                  "(`@cutile.entry(pdl=False)`, or CUTILE_PDL=0 for every kernel)"
                  if lowered.pdl else None)
        require_version(version, f"`{lowered.entry_name}` (its `{newer_op}`)", remedy)
    bytecode = write_bytecode(lowered.module, version)
    t1 = time.perf_counter()
    out = compile_cubin(bytecode, arch=target, opt_level=opt_level, kernel=identity)
    t2 = time.perf_counter()
    dump.after_assembly(identity, bytecode, out.cubin)
    if not out.from_cache:
        where = cache_dir()
        log.compile_finished(f"`{lowered.entry_name}` for {target}", t2 - t0,
                             str(where) if where else None)
    return CompiledKernel(
        lowered.entry_name, target, lowered, bytecode, out.cubin, out.from_cache,
        {"bytecode_s": t1 - t0, "assemble_s": t2 - t1},
    )
