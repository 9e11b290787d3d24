"""The Qwen3 engine: prefill and the decode step, every kernel a safe cutile kernel.

Everything a decode step touches is allocated once, here: the weights, the KV caches
(one [KV heads, positions, head_dim] bf16 tensor per layer for keys and one for values),
the token buffer, the position, the residual stream and every intermediate. The position
and the tokens live on the device: a step reads the token at `pos`, writes the next one at
`pos + 1` and advances `pos`, so it takes no input from the host and returns nothing. That
is what lets the whole step be captured once as a CUDA graph and replayed per token; until
the runtime offers graphs, `decode_step` issues its ops one by one (each op owns its
tensors while it runs, and hands them back).

A decode step of an L-layer model is 2 + 7 L kernels (+1 when sampling; one more per layer
with the MLP unfused, `Plan.mlp_fused`, one less with the combine fused, `Plan.attn_fused`):

    embed_row                      h = embedding[tokens[pos]]
    per layer:
      gemv_norm_partial (QKV)      partial sums of Wqkv bf16(h * w_attn_norm)
      qkv_finish                   sum, norm scale, q/k RMSNorm, RoPE, k and v into the cache
      attn_decode                  flash-decoding shares over the cache
      attn_combine                 their softmax-weighted sum, bf16
        (`Plan.attn_path` "heads" / "fused": `attn_paths.py`; embed_row_rope first)
      gemv_add (O)                 h += Wo attn           (atomic adds into h)
        (`Plan.attn_fused`: gemv_attn_add, the combine inside the projection: one kernel)
      gemv_swiglu (gate/up)        act = silu(g) * u, bf16: whole rows of Wg and Wu per block
        (unfused: gemv_norm_partial, then swiglu_finish to add the partial sums)
      gemv_add (down)              h += Wd act
    lm_head_argmax                 logits and each block's best
    select_greedy | topk_partial + sample_select    tokens[pos + 1], pos += 1
      (| sample_exact: no top-k, or one above the plan's candidates)

`Plan.pdl` launches every kernel with programmatic dependent launch (`llm.kernels.pdl`):
each kernel's blocks start while the one before finishes, and wait for it on the device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import numpy as np

import cutile
from cutile import api
from cutile.api import Tensor
from cutile.core import bf16, f32, i32

from . import attn_paths
from .config import Qwen3Config
from .kernels import attention as attn
from .kernels import decode_misc, prefill, sample_exact, sampling
from .kernels.gemv import check_ahead, gemv_kernels
from .kernels.pdl import with_contract, with_pdl
from .kernels.qkv import qkv_finish
from .plan import Plan, cdiv, plan_for, pow2_at_least
from .prefill_plan import norm_kernel, prefill_kernels
from .reference import Sampling, rope_tables, uses_candidates
from .weights import Weights


class CapacityError(ValueError):
    """The engine's positions (`Engine(max_seq=...)`) cannot hold what was asked: a prompt
    longer than them, or a decode step past the last one. Checked on the host before any
    op runs, so the engine keeps its state (a device check mid-step would leave its
    buffers with the failed op)."""


class EngineStateError(RuntimeError):
    """An engine call its state does not allow: a decode step (or a capture) before a
    prompt is loaded, which would continue from token 0 in silence; a change of sampling
    while a `DecodeGraph` captured with the old one is open, which would keep sampling the
    old way in silence."""


@dataclass
class GraphState:
    """An open `DecodeGraph`'s bookkeeping, shared with the engine: if the graph is dropped
    without `close()`, the engine still learns how far its replays took the position."""
    start: int
    launches: int = 0
    replays: int = 0
    closed: bool = False


class Slot:
    """A persistent device buffer. Kernels read it whole and write it through a partition
    (`Out`); the handle changes when a partition is given back, the memory never does."""

    def __init__(self, t: Tensor, name: str):
        self.t = t
        self.name = name
        self.shape = list(t.shape)   # kept while a view of it is out (`take`)

    def numpy(self) -> np.ndarray:
        return self.t.to_numpy()


@dataclass(frozen=True)
class Out:
    slot: Slot
    tile: tuple[int, ...]
    view: tuple[int, ...] | None = None     # partition a reshaped view of the slot
    blocks: int | None = None               # a persistent launch of this many blocks


def out(slot: Slot, *tile: int, view: Sequence[int] | None = None,
        blocks: int | None = None) -> Out:
    return Out(slot, tuple(tile), None if view is None else tuple(view), blocks)


@dataclass(frozen=True)
class Row:
    """Row `index` of a slot's tensor (a view), taken when the op is bound: inside a chain
    an earlier op may still have to partition the whole tensor, which a live view of it
    would refuse (CT5004)."""
    slot: Slot
    index: int


def take(a: Out) -> Any:
    """The slot's tensor partitioned for a launch, through its view if any (persistent
    when asked). A view is partitioned only as its storage's one live handle: the slot
    lets go of its handle, and that handle is first consumed (partitioned whole and given
    back), since an op that read it may still hold it (a graph capture keeps what its ops
    were given)."""
    t = a.slot.t
    if a.view is None:
        part = t.partition(list(a.tile))
    else:
        a.slot.t = None  # type: ignore[assignment]
        try:
            whole = t.partition(list(t.shape)).unpartition()
        except BaseException:
            a.slot.t = t  # (refused: the slot keeps its tensor)
            raise
        del t
        view = whole.reshape(list(a.view))
        del whole
        try:
            part = view.partition(list(a.tile))
        except BaseException:
            a.slot.t = view.reshape(list(a.slot.shape))
            raise
    if a.blocks is None:
        return part
    try:
        return part.persistent(a.blocks)
    except BaseException:
        give_back(a, part)
        raise


def give_back(a: Out, got: Any) -> None:
    """The partition a launch handed back, whole again in the slot's own shape."""
    whole = got.unpartition()
    a.slot.t = whole if a.view is None else whole.reshape(list(a.slot.shape))


class Engine:
    def __init__(self, weights: Weights, max_seq: int, plan: Plan | None = None,
                 sampling_: Sampling | None = None):
        if not isinstance(weights, Weights):
            raise TypeError(f"Engine takes llm.weights.Weights (load_checkpoint(dir) or "
                            f"random_weights(cfg)), got {type(weights).__name__}")
        c = weights.cfg
        if isinstance(max_seq, bool) or not isinstance(max_seq, int) or max_seq < 2:
            raise CapacityError(f"max_seq must be an integer >= 2 (a prompt token and a "
                                f"generated one), got {max_seq!r}")
        self.cfg, self.w = c, weights
        self.plan = plan or plan_for(c)
        # shapes the kernels cannot take are refused here, not by a kernel's checker deep in
        # the first prefill (or, for some, never: wrong tokens)
        check_config(c, self.plan)
        if sampling_ is not None and not isinstance(sampling_, Sampling):
            raise TypeError(f"sampling_ is a llm.reference.Sampling, got {sampling_!r}")
        self._sampling = sampling_ or Sampling()
        p = self.plan
        self.gemv = {name: gemv_kernels(t.occupancy, t.latency, p.early_of(name))
                     for name, t in self._gemvs().items()}
        self.lm = gemv_kernels(p.lm_occupancy, None, p.early_of("lm"))
        # The cache and token buffer extents are powers of two: each is one tile, and a
        # position past the end fails the device check instead of vanishing in padding.
        self.capacity = pow2_at_least(max_seq)
        attn_paths.check(c, self.plan, self.capacity)
        # the device's pos as the host last left it (0 until a prompt is loaded): a step
        # from the last position would write past the token buffer
        self.host_pos = 0
        self.prompt_loaded = False           # (set by load_prompt)
        # the open DecodeGraph's bookkeeping and the graph (weakly: dropping it without
        # close() gives the buffers back, `_settle` then takes its position)
        self._graph: GraphState | None = None
        self._graph_ref: Callable[[], Any] | None = None
        self.ops = 0                         # kernels launched so far
        self.prefill_k = prefill_kernels(self.plan.prefill)
        # the ops `_run` queued inside `_chained()` (None: `_run` launches and waits)
        self._chain: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] | None = None
        # the slots' tensors the ops launched now hold (partitioned), by slot: handed back
        # to the slots if a launch fails (`_recover`)
        self._taken: dict[int, tuple[Out, Any]] = {}
        # called with (kernel, op) before each op runs (benchmarks record launches)
        self.observer: Callable[[Any, Any], None] | None = None
        self._alloc_buffers()

    # -- buffers ------------------------------------------------------------------------------

    def _gemvs(self) -> dict[str, Any]:
        p = self.plan
        return {"qkv": p.qkv, "o": p.o, "gate_up": p.gate_up, "down": p.down}

    def _alloc_buffers(self) -> None:
        c, p = self.cfg, self.plan
        h, kv, d, g = c.hidden_size, c.num_kv_heads, c.head_dim, c.group

        def slot(name: str, shape: Sequence[int], dtype: Any, fill: float = 0) -> Slot:
            return Slot(api.full(list(shape), fill, dtype), name)

        self.tokens = slot("tokens", [self.capacity], i32)
        self.pos = slot("pos", [1], i32)
        self.h = slot("h", [h], f32)
        self.qkv_part = slot("qkv_part", [p.qkv.splits(h), c.qkv_size], f32)
        self.q = slot("q", [c.num_heads, d], f32)
        self.k_cache = [slot(f"k_cache{i}", [kv, self.capacity, d], bf16)
                        for i in range(c.num_layers)]
        self.v_cache = [slot(f"v_cache{i}", [kv, self.capacity, d], bf16)
                        for i in range(c.num_layers)]
        ns = p.attn_splits
        self.attn_o = slot("attn_o", [kv, ns, g * d], f32)
        self.attn_m = slot("attn_m", [kv, ns, g], f32)
        self.attn_l = slot("attn_l", [kv, ns, g], f32)
        self.attn = slot("attn", [c.q_size], bf16)
        if p.attn_path != "split":             # the QKV GEMV's sums of squares of h
            self.qkv_ss = slot("qkv_ss", [p.qkv.splits(h), cdiv(c.qkv_size, p.qkv.BO)], f32)
        if p.attn_path in ("fused", "ahead"):  # the new key and value, for the combine
            # (a tile per block of the kernel that writes it: (KV, NS) or (KV, G))
            rows = ns if p.attn_path == "fused" else g
            self.kv_new = slot("kv_new", [kv, rows, 2 * d], bf16)
        if p.attn_path != "split":             # the step's cos | sin row (one per block)
            self.rope_cs = slot("rope_cs", [cdiv(h, p.embed_tile), d], f32)
        if not p.mlp_fused:
            self.gu_part = slot("gu_part", [p.gate_up.splits(h), 2 * c.intermediate_size],
                                f32)
        self.act = slot("act", [c.intermediate_size], bf16)
        self.logits = slot("logits", [c.vocab_size], f32)
        nb = cdiv(c.vocab_size, p.lm_bo)
        self.bmax = slot("bmax", [nb], f32)
        self.barg = slot("barg", [nb], i32)
        nc = cdiv(c.vocab_size, p.sample_chunk)
        self.cand_v = slot("cand_v", [nc, p.sample_k], f32)
        self.cand_i = slot("cand_i", [nc, p.sample_k], i32)
        # whole-vocabulary sampling's partial results (`sample_exact.launch_sample_exact`)
        exact = {}
        for name, (shape, dtype, copies) in sample_exact.buffer_shapes(
                c.vocab_size, p.exact_chunk).items():
            made = [slot(f"exact_{name}{i}", shape, dtype) for i in range(copies)]
            exact[name] = made if copies > 1 else made[0]
        self.exact = SimpleNamespace(**exact)
        cos, sin = rope_tables(c, self.capacity)
        self.cos = Slot(api.from_numpy(cos), "cos")
        self.sin = Slot(api.from_numpy(sin), "sin")

    def buffer_bytes(self) -> int:
        slots = [v for v in vars(self).values() if isinstance(v, Slot)]
        slots += self.k_cache + self.v_cache
        slots += [x for v in vars(self.exact).values() for x in (v if isinstance(v, list) else [v])]
        return sum(s.t.nbytes for s in slots)

    # -- launching ----------------------------------------------------------------------------

    def _run(self, kernel: Any, *args: Any, **kw: Any) -> None:
        """Launch `kernel` and wait: `Out` arguments are partitioned for the launch and
        given back whole afterwards, `Slot`s are read whole. Inside `_chained()` the op is
        queued instead, and runs in the chain."""
        if self._chain is not None:
            self._chain.append((kernel, args, kw))
            return
        try:
            op = self._op(kernel, args, kw)
            back = op.sync()
        except BaseException:
            op = None  # (a started op hands its tensors back when dropped)
            self._recover()
            raise
        self._take_back(args, back)

    def _op(self, kernel: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        """The op of a launch, its `Out` slots partitioned (through views, persistent when
        asked), with programmatic dependent launch when the plan says so."""
        bound = []
        for a in args:
            if isinstance(a, Out):
                part = take(a)
                self._taken[id(a.slot)] = (a, part)
                bound.append(part)
            else:
                bound.append(a.t if isinstance(a, Slot) else a.slot.t[a.index]
                             if isinstance(a, Row) else a)
        if self.plan.pdl and (not self.plan.pdl_kernels
                              or kernel.name in self.plan.pdl_kernels):
            kernel = with_pdl(kernel, self.plan.pdl_early,
                              kernel.name in self.plan.trigger_first)
        if self.plan.fp_contract:
            kernel = with_contract(kernel)
        op = kernel(*bound, **kw)
        del bound
        if self.observer is not None:
            self.observer(kernel, op)
        self.ops += 1
        return op

    def _take_back(self, args: tuple[Any, ...], back: Any) -> None:
        for a, got in zip(args, back if isinstance(back, tuple) else (back,), strict=False):
            if isinstance(a, Out):
                give_back(a, got)
                self._taken.pop(id(a.slot), None)

    def _recover(self) -> None:
        """A launch failed (refused, failed to start, or its device work failed): every
        slot an op took gets its tensor back, from the partition the op handed back, so
        the engine stays usable. A step is safe to run again: it changes the position
        and the token buffer in its last op only, and rewrites everything else it reads.
        A partition still held (device work that never completed) stays with its op, and
        the slot's next use raises BorrowError rather than run on a half-written step."""
        import gc

        gc.collect()  # ops of a failed chain, dropped in a cycle with the traceback
        taken, self._taken = self._taken, {}
        for a, part in taken.values():
            try:
                give_back(a, part)
            except cutile.CutileError:
                pass

    @contextmanager
    def _chained(self) -> Iterator[None]:
        """The ops `_run` issues inside run as one `.then` chain with one wait at the end
        (docs/runtime.md): each op is enqueued as soon as the one before it is, on the
        same stream (which orders them), and its results are handed back at once, so the
        next op can take them; the host never waits in between. Each op is bound when the
        chain reaches it, so it sees the slots as the ops before it left them."""
        self._chain = []
        try:
            yield
            queued = self._chain
        finally:
            self._chain = None
        try:
            self._run_chain(queued)
        except BaseException:
            self._recover()
            raise

    def _run_chain(self, queued: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]) -> None:
        if not queued:
            return

        def step(before: tuple[Any, ...], kernel: Any, args: tuple[Any, ...],
                 kw: dict[str, Any]) -> Callable[..., Any]:
            def next_op(*back: Any) -> Any:
                self._take_back(before, back)
                return self._op(kernel, args, kw)
            return next_op

        kernel, args, kw = queued[0]
        chain = self._op(kernel, args, kw)
        for before, (kernel, args, kw) in pairwise(queued):
            chain = chain.then(step(before[1], kernel, args, kw))
        last = queued[-1][1]
        chain.then(lambda *back: self._take_back(last, back)).sync()

    def _gemv_partial(self, which: str, part: Slot, w: Tensor, norm: Tensor) -> None:
        t, g = getattr(self.plan, which), self.gemv[which]
        if t.loop:
            self._run(g.norm_partial_loop, out(part, 1, t.BO), w, self.h, norm, t.KPS, BK=t.BK)
        else:
            self._run(g.norm_partial, out(part, 1, t.BO), w, self.h, norm, BK=t.BK, KPS=t.KPS)

    def _gemv_add(self, which: str, w: Tensor, x: Slot) -> None:
        t, g = getattr(self.plan, which), self.gemv[which]
        n, k = w.shape
        grid = (cdiv(n, t.BO), t.splits(k))
        if t.loop:
            self._run(g.add_loop, self.h, w, x, t.KPS, BO=t.BO, BK=t.BK, grid=grid)
        else:
            self._run(g.add, self.h, w, x, BO=t.BO, BK=t.BK, KPS=t.KPS, grid=grid)

    def _attn_out(self, wo: Tensor) -> None:
        """h += Wo attn, attn the combine of the flash-decoding shares: inside the
        projection (`attn_fused`) or by `attn_combine` first."""
        c, p = self.cfg, self.plan
        if p.attn_fused:
            t = p.o
            grid = (cdiv(c.hidden_size, t.BO), c.num_kv_heads)
            self._run(self.gemv["o"].attn_add, self.h, wo, self.attn_o, self.attn_m,
                      self.attn_l, BO=t.BO, BK=t.BK, G=c.group, D=c.head_dim,
                      NS=p.attn_splits, grid=grid)
            return
        self._run(attn.attn_combine, out(self.attn, p.combine_chunk), self.attn_o,
                  self.attn_m, self.attn_l, G=c.group, D=c.head_dim, NS=p.attn_splits)
        self._gemv_add("o", wo, self.attn)

    def _mlp_in(self, wgu: Tensor, norm: Tensor) -> None:
        """act = silu(g) * u of the MLP norm's output: one fused kernel, or the split
        gate/up GEMV and `swiglu_finish`."""
        c, p = self.cfg, self.plan
        eps, hb, i = c.rms_norm_eps, pow2_at_least(c.hidden_size), c.intermediate_size
        if p.mlp_fused:
            t = p.gate_up
            self._run(self.gemv["gate_up"].swiglu, out(self.act, t.BO), wgu, self.h, norm, eps,
                      BK=t.BK, HB=hb, UP=i // t.BO)
            return
        self._gemv_partial("gate_up", self.gu_part, wgu, norm)
        self._run(decode_misc.swiglu_finish, out(self.act, p.swiglu_tile), self.gu_part,
                  self.h, eps, HB=hb, UP=i // p.swiglu_tile)

    # -- the decode step ----------------------------------------------------------------------

    @property
    def sampling(self) -> Sampling:
        return self._sampling

    @sampling.setter
    def sampling(self, s: Sampling) -> None:
        """Greedy and sampled steps mix freely op by op; a captured graph keeps the
        sampling it was captured with, so a change is refused while one is open."""
        if not isinstance(s, Sampling):
            raise TypeError(f"Engine.sampling is a llm.reference.Sampling, got {s!r}")
        self._settle()
        if self._graph is not None:
            raise EngineStateError("a DecodeGraph captured with the engine's sampling is open "
                                   "and would go on sampling the old way: close() it, set "
                                   "the sampling, capture again")
        self._sampling = s

    def _settle(self) -> None:
        """Take the position of a DecodeGraph closed or dropped since the last call."""
        g = self._graph
        if g is None:
            return
        if not g.closed and self._graph_ref is not None and self._graph_ref() is not None:
            return                            # still open
        if not g.closed:                      # dropped without close(): its replays count
            self.ops += g.replays * g.launches
            self.host_pos = g.start + g.replays
        self._graph = self._graph_ref = None

    def _need_prompt(self, what: str) -> None:
        if not self.prompt_loaded:
            raise EngineStateError(f"{what} before a prompt is loaded would continue from "
                                   "token 0: call load_prompt(ids) first")

    def decode_step(self, chained: bool = False) -> None:
        """One token: reads tokens[pos], writes tokens[pos + 1], advances pos. Issues ops
        on the persistent buffers only (no allocation, no host input). `chained`: the
        step's ops run as one chain with one wait at the end (`_chained`), rather than
        each waited for (the first token after a prompt, before a graph is captured)."""
        self._need_prompt("a decode step")
        self.check_room(1)
        with self._chained() if chained else nullcontext():
            self._decode_ops()
        self.host_pos += 1

    def check_room(self, steps: int, pos: int | None = None) -> None:
        """Refuse `steps` decode steps from `pos` (default: the engine's) that would write a
        token past the last position."""
        self._settle()
        pos = self.host_pos if pos is None else pos
        if pos + steps >= self.capacity:
            raise CapacityError(f"{steps} more decode step(s) from position {pos} would write "
                                f"past the {self.capacity} positions allocated; make the "
                                f"engine with a larger max_seq")

    def _decode_ops(self) -> None:
        c, p, w = self.cfg, self.plan, self.w
        eps = c.rms_norm_eps
        hb = pow2_at_least(c.hidden_size)
        if p.attn_path == "split":
            self._run(decode_misc.embed_row, out(self.h, p.embed_tile), w.embed, self.tokens,
                      self.pos)
        else:                                  # and the step's cos/sin row, read once
            attn_paths.embed(self)
        for i, lw in enumerate(w.layers):
            if p.attn_path != "split":
                attn_paths.attention(self, i, lw)    # "heads" | "fused" | "ahead"
                if p.attn_fused:                     # "heads": the combine in the GEMV
                    self._attn_out(lw.wo)
                else:
                    self._gemv_add("o", lw.wo, self.attn)
                self._mlp_in(lw.wgu, lw.mlp_norm)
                self._gemv_add("down", lw.wd, self.act)
                continue
            self._gemv_partial("qkv", self.qkv_part, lw.wqkv, lw.attn_norm)
            self._run(qkv_finish, out(self.q, c.group, c.head_dim),
                      out(self.k_cache[i], 1, self.capacity, c.head_dim),
                      out(self.v_cache[i], 1, self.capacity, c.head_dim), self.qkv_part,
                      self.h, lw.q_norm, lw.k_norm, self.cos, self.sin, self.pos, eps,
                      HB=hb, NH=c.num_heads, NKV=c.num_kv_heads,
                      SB=pow2_at_least(p.qkv.splits(c.hidden_size)))
            gd = c.group * c.head_dim
            self._run(attn.attn_decode, out(self.attn_o, 1, 1, gd),
                      out(self.attn_m, 1, 1, c.group), out(self.attn_l, 1, 1, c.group),
                      self.q, self.k_cache[i], self.v_cache[i], self.pos,
                      1.0 / math.sqrt(c.head_dim), D=c.head_dim, BS=p.attn_bs,
                      M=max(16, c.group), NS=p.attn_splits)
            self._attn_out(lw.wo)
            self._mlp_in(lw.wgu, lw.mlp_norm)
            self._gemv_add("down", lw.wd, self.act)
        self._run(self.lm.lm_head_argmax, out(self.logits, p.lm_bo), out(self.bmax, 1),
                  out(self.barg, 1), w.lm_head, self.h, w.final_norm, eps, BK=p.lm_bk, HB=hb)
        self._select()

    def capture_decode(self) -> Any:
        """The decode step captured once as a `cutile.graph` (`llm.decode_graph`): it owns
        every buffer of the engine until its `close()`."""
        from .decode_graph import DecodeGraph

        self._need_prompt("capturing the decode step")
        return DecodeGraph(self)

    def _select(self) -> None:
        p, s = self.plan, self.sampling
        if s.greedy:
            self._run(sampling.select_greedy, out(self.tokens, self.capacity),
                      out(self.pos, 1), self.bmax, self.barg,
                      NB=pow2_at_least(self.bmax.t.shape[0]))
            return
        if not uses_candidates(s, p.sample_k):     # no top-k, or one above the candidates
            sample_exact.launch_sample_exact(
                self._run, out, self.exact, out(self.tokens, self.capacity), out(self.pos, 1),
                self.logits, self.cfg.vocab_size, 1.0 / s.temperature, s.top_p, s.top_k,
                s.seed, p.exact_chunk)
            return
        self._run(sampling.topk_partial, out(self.cand_v, 1, p.sample_k),
                  out(self.cand_i, 1, p.sample_k), self.logits, CH=p.sample_chunk)
        self._run(sampling.sample_select, out(self.tokens, self.capacity), out(self.pos, 1),
                  self.cand_v, self.cand_i, 1.0 / s.temperature, s.top_p,
                  s.top_k, s.seed & 0xFFFFFFFF,
                  NC=pow2_at_least(self.cand_v.t.shape[0]), K=p.sample_k)

    # -- prompt and prefill -------------------------------------------------------------------

    def load_prompt(self, ids: Sequence[int], first_token: bool = False) -> None:
        """Put the prompt in the token buffer (pos = its last token) and run the prefill
        of all but its last token, which the first decode step processes. `first_token`:
        the prefill takes every prompt token and ends with the LM head on the last one,
        so the first generated token is in the token buffer (pos = its index) and the
        next decode step generates the second: the prompt to the first token's logits in
        one chain of batched kernels, as a Hugging Face forward pass computes them."""
        c = self.cfg
        arr = np.asarray(ids)
        # a float id would be truncated by the int32 copy, a nested list misread
        if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
            raise ValueError(f"a prompt is a flat sequence of integer token ids, got "
                             f"{arr.ndim}-d {arr.dtype}")
        if not len(arr):
            raise ValueError("an empty prompt does not fit: a prompt needs at least one token")
        if len(arr) >= self.capacity:
            raise CapacityError(f"a prompt of {len(arr)} tokens does not fit {self.capacity} "
                                "positions (one more is needed for the first new token)")
        bad = arr[(arr < 0) | (arr >= c.vocab_size)]
        if len(bad):
            raise ValueError(f"token ids must be in [0, {c.vocab_size}); got {int(bad[0])}")
        self._settle()
        prompt = api.from_numpy(arr.astype(np.int32))
        self._run(prefill.set_prompt, out(self.tokens, self.capacity), out(self.pos, 1),
                  prompt)
        self.host_pos = len(arr) - 1
        self.prompt_loaded = True
        if first_token:
            self._prefill(prompt, logits=True)
            self.host_pos += 1
        elif len(arr) > 1:
            self._prefill(api.from_numpy(arr[:-1].astype(np.int32)))

    def _prefill(self, toks: Tensor, logits: bool = False) -> None:
        """Every layer over the prompt's tokens, filling the KV caches. The residual
        stream ping-pongs between two f32 buffers (a residual GEMM reads one and writes
        the other: read-modify-write of one output tile spills the persistent kernels'
        accumulators), or stays in one where both residual GEMMs add into it with
        atomics (the split-K plans). Only the caches are kept: the hidden states are not (the first
        decode step computes the last token's), so with `kv_only_last` the last layer
        stops after its keys and values; with `logits` every layer runs whole and the LM
        head takes the last row."""
        c, pp, w, k = self.cfg, self.plan.prefill, self.w, self.prefill_k
        t, hsz, d = toks.shape[0], c.hidden_size, c.head_dim
        hb = pow2_at_least(hsz)
        eps = c.rms_norm_eps

        def buf(name: str, shape: Sequence[int], dtype: Any) -> Slot:
            return Slot(api.empty(list(shape), dtype), name)

        hs = [buf("hs0", [t, hsz], f32)]
        if not (pp.o.atomic and pp.down.atomic):
            hs.append(buf("hs1", [t, hsz], f32))
        xw, inv = buf("xw", [t, hsz], bf16), buf("inv", [t], f32)
        qkv, o = buf("qkv", [t, c.qkv_size], bf16), buf("o", [t, c.q_size], bf16)
        act = buf("act", [t, c.intermediate_size], bf16)
        rows = max(1, min(pp.row_tile, 4096 // hb))        # norm_prep rows per block

        def norm(h: Slot, weight: Tensor) -> None:
            """xw = bf16(h * weight) and inv = rsqrt(mean(h^2) + eps), per row."""
            r = pp.norm_rows or rows
            self._run(norm_kernel(bool(pp.norm_bk), pp.norm_occupancy), out(xw, r, hb),
                      out(inv, r), h, weight, eps, **({"BK": pp.norm_bk} if pp.norm_bk else {}))

        def gemm_out(slot: Slot, g: Any, n: int) -> Out:
            return out(slot, g.BM, g.BN, blocks=g.blocks(t, n, pp.sms))

        def residual(kernel: Any, g: Any, cur: int, x: Slot, wt: Tensor) -> int:
            """hs[1 - cur] = hs[cur] + x W^T; the stream is in hs[1 - cur] after it. An
            atomic kernel (`g.atomic`) adds into hs[cur] in place instead, in the plan's
            launches (split K ranges of one tile add into it from different blocks)."""
            if not g.atomic:
                self._run(kernel, gemm_out(hs[1 - cur], g, hsz), hs[cur], x, wt, BK=g.BK)
                return 1 - cur
            for launch in g.launches(t, hsz, wt.shape[1], pp.sms):
                extra = () if g.atomic == "streamk" else (launch.J0, launch.KPS)
                self._run(kernel, hs[cur], x, wt, *extra, BM=g.BM, BN=g.BN, BK=g.BK,
                          grid=launch.grid)
            return cur

        with self._chained() if pp.chained else nullcontext():
            self._run(prefill.embed_rows, out(hs[0], pp.row_tile, min(256, hb)), w.embed,
                      toks)
            cur = 0
            for i, lw in enumerate(w.layers):
                norm(hs[cur], lw.attn_norm)
                self._run(k.qkv, gemm_out(qkv, pp.qkv, c.qkv_size), xw, lw.wqkv, inv,
                          lw.q_norm, lw.k_norm, self.cos, self.sin, eps, BK=pp.qkv.BK,
                          NH=c.num_heads, NKV=c.num_kv_heads)
                self._run(prefill.cache_fill, out(self.k_cache[i], 1, pp.row_tile, d),
                          out(self.v_cache[i], 1, pp.row_tile, d), qkv, NH=c.num_heads,
                          NKV=c.num_kv_heads)
                if pp.kv_only_last and not logits and i == len(w.layers) - 1:
                    break
                self._run(k.attn, out(o, pp.attn_bm, d), qkv, 1.0 / math.sqrt(d),
                          G=c.group, NH=c.num_heads, NKV=c.num_kv_heads)
                cur = residual(k.o, pp.o, cur, o, lw.wo)
                norm(hs[cur], lw.mlp_norm)
                g = pp.gate_up
                self._run(k.gate_up, gemm_out(act, g, c.intermediate_size), xw, lw.wgu, inv,
                          BK=g.BK, UP=c.intermediate_size // g.BN)
                cur = residual(k.down, pp.down, cur, act, lw.wd)
            if logits:                         # the last token's logits and the next token
                p = self.plan
                self._run(self.lm.lm_head_argmax, out(self.logits, p.lm_bo), out(self.bmax, 1),
                          out(self.barg, 1), w.lm_head, Row(hs[cur], t - 1), w.final_norm, eps,
                          BK=p.lm_bk, HB=hb)
                self._select()

    # -- reading results ----------------------------------------------------------------------

    def position(self) -> int:
        return int(self.pos.numpy()[0])

    def token_ids(self) -> np.ndarray:
        """The sequence so far: the prompt and every generated token."""
        return self.tokens.numpy()[:self.position() + 1]

    def read_logits(self) -> np.ndarray:
        """Logits of the last decode step."""
        return self.logits.numpy()

    def kv_bytes(self, context: int) -> int:
        """Bytes of keys and values a decode step at this context reads."""
        c = self.cfg
        return 2 * c.num_layers * c.num_kv_heads * context * c.head_dim * 2


def check_config(cfg: Qwen3Config, plan: Plan) -> None:
    """Shapes the kernels rely on (tile sizes dividing what they must divide)."""
    i = cfg.intermediate_size
    fused = plan.gate_up.BO if plan.mlp_fused else 1
    gate = plan.prefill.gate_up.BN
    if i % plan.swiglu_tile or i % gate or i % fused:
        raise ValueError(f"intermediate size {i} must be a multiple of the SwiGLU tiles "
                         f"({plan.swiglu_tile}, {gate}, {fused})")
    if plan.prefill.qkv.BN != cfg.head_dim:
        raise ValueError(f"the prefill QKV GEMM's tiles are one head wide: BN = "
                         f"{plan.prefill.qkv.BN}, head_dim {cfg.head_dim}")
    if cfg.head_dim & (cfg.head_dim - 1):
        raise ValueError(f"head_dim {cfg.head_dim} must be a power of two (one tile)")
    if plan.attn_splits & (plan.attn_splits - 1):
        raise ValueError("attention splits must be a power of two")
    for role in ("qkv", "o", "gate_up", "down", "lm"):
        check_ahead(plan.early_of(role))
    o = plan.o
    if plan.attn_fused and (cfg.head_dim % o.BK or o.KPS * o.BK != cfg.group * cfg.head_dim
                            or o.loop):
        raise ValueError(f"the output projection with the combine folded in takes one kv "
                         f"head's {cfg.group * cfg.head_dim} columns per block in unrolled "
                         f"tiles that divide head_dim: BK={o.BK}, KPS={o.KPS} do not")
