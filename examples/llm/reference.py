"""A numpy (float32) Qwen3 with the engine's numerics, the yardstick of the tests.

It rounds where the engine stores bf16 and nowhere else: the input of every projection is
bf16(h * w_norm) and the norm's rsqrt(mean(h^2) + eps) scales the projection's output; the
KV cache, the attention output and the SwiGLU output are bf16; the residual stream, every
accumulation, the norms, RoPE and the softmax are f32. Prefill tokens go through the
tensor cores in the engine, so there q is rounded to bf16, and the reference's prefill
attention is the engine's flash attention: key tiles of `prefill_block` rows, a running
maximum, and bf16 probabilities (relative to that running maximum) times the values.

The random numbers (`mix32`, `uniform`) are the device's, bit for bit, so random weights
and seeded sampling can be recomputed here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import ml_dtypes
import numpy as np

from .config import Qwen3Config

BF16 = ml_dtypes.bfloat16
# The device takes 1 / temperature as an f32 and the seed as a u32: a smaller positive
# temperature overflowed the f32 (a LaunchError from inside the sampling kernel), a larger
# seed was cut to its low 32 bits (seed 2**32 sampled as seed 0, without a word).
MIN_TEMPERATURE = float(1 / np.float64(np.finfo(np.float32).max))
SEED_LIMIT = 2**32


def bf16_round(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).astype(BF16).astype(np.float32)


def mix32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.uint32)
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def uniform(counter: np.ndarray | int, seed: int) -> np.ndarray:
    """`kernels.sampling.uniform` on the host: floats in [0, 1) from u32 counters."""
    with np.errstate(over="ignore"):
        bits = mix32(mix32(np.asarray(counter, np.uint32)) ^ np.uint32(seed))
    return (bits >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def uniform_weights(shape: tuple[int, ...], seed: int, scale: float, offset: float
                    ) -> np.ndarray:
    """What `kernels.fill.init_uniform_*` writes: offset + scale * (2u - 1), in bf16."""
    u = uniform(np.arange(int(np.prod(shape)), dtype=np.uint32).reshape(shape), seed)
    one = np.float32
    return (one(offset) + one(scale) * (one(2.0) * u - one(1.0))).astype(BF16)


def rope_tables(cfg: Qwen3Config, positions: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [positions, head_dim / 2] in f32, computed as Hugging Face's Qwen3
    rotary embedding computes them (f32 inverse frequencies times f32 positions)."""
    d = cfg.head_dim
    exponents = np.arange(0, d, 2, dtype=np.int64).astype(np.float32) / np.float32(d)
    inv_freq = (np.float32(1.0) / (np.float32(cfg.rope_theta) ** exponents)).astype(np.float32)
    angles = np.arange(positions, dtype=np.float32)[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


LOG2E = np.float32(1.4426950408889634)


def flash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int) -> np.ndarray:
    """Causal attention of q [T, D] over k, v [T, D] as `attn_prefill` computes it: per
    tile of `block` query rows, key tiles in order with a running maximum (base 2), the
    probabilities rounded to bf16 before they multiply the values."""
    t, d = q.shape
    scale = np.float32(1.0 / np.sqrt(d)) * LOG2E
    out = np.empty_like(q)
    for r0 in range(0, t, block):
        rows = np.arange(r0, min(r0 + block, t))
        m = np.full((len(rows), 1), -np.inf, np.float32)
        total = np.zeros((len(rows), 1), np.float32)
        acc = np.zeros((len(rows), d), np.float32)
        for c0 in range(0, r0 + block, block):
            cols = np.arange(c0, min(c0 + block, t))
            if not len(cols):
                break
            s = (q[rows] @ k[cols].T) * scale
            s = np.where(cols[None, :] <= rows[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=1, keepdims=True))
            alpha = np.exp2(m - m_new)
            p = np.exp2(s - m_new)
            total = total * alpha + p.sum(axis=1, keepdims=True)
            acc = acc * alpha + bf16_round(p) @ v[cols]
            m = m_new
        out[rows] = acc / total
    return out


@dataclass
class Sampling:
    """Greedy when temperature is 0; else temperature, top-k (0: none) and top-p, applied
    in Hugging Face's order (top-k, then top-p within it)."""

    temperature: float = 0.0
    top_k: int = 50
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        # refused here, not on the device: a NaN or negative temperature read as greedy, a
        # top-k of 0 or a top-p of 0 sampled anyway, each without a word
        t, k, p = self.temperature, self.top_k, self.top_p
        if isinstance(t, bool) or not (isinstance(t, Real) and math.isfinite(t) and t >= 0):
            raise ValueError(f"temperature must be a finite number >= 0 (0: greedy), got {t!r}")
        if 0 < t < MIN_TEMPERATURE:
            raise ValueError(f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE:.4g} "
                             f"(the device takes 1 / temperature as an f32), got {t!r}")
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 0:
            raise ValueError(f"top_k must be an integer >= 0 (0: no top-k), got {k!r}")
        if isinstance(p, bool) or not (isinstance(p, Real) and 0 < p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {p!r}")
        check_seed(self.seed)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


def check_seed(seed: object) -> None:
    """A seed is a u32 on the device: refused outside [0, 2**32) rather than cut."""
    if isinstance(seed, bool) or not isinstance(seed, Integral) or not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")


def uses_candidates(s: Sampling, candidates: int) -> bool:
    """Whether the engine samples from the `candidates` largest logits (`kernels.sampling`)
    or over the whole vocabulary (`kernels.sample_exact`: no top-k, or one above them)."""
    return 1 <= s.top_k <= candidates


def sample(logits: np.ndarray, pos: int, s: Sampling, candidates: int) -> int:
    """The device's choice (`kernels.sampling` or `kernels.sample_exact`) for the token
    after position `pos`."""
    if s.greedy:
        return int(np.argmax(logits))
    if not uses_candidates(s, candidates):
        return sample_exact(logits, pos, s)
    order = np.argsort(-logits, kind="stable")[:candidates]
    vals = logits[order].astype(np.float32)
    rank = np.arange(candidates)
    z = np.where(rank < s.top_k, vals * np.float32(1.0 / s.temperature), -np.inf)
    p = np.exp(z - z.max()).astype(np.float32)
    p = p / p.sum(dtype=np.float32)
    before = np.cumsum(p, dtype=np.float32) - p
    p = np.where((before < np.float32(s.top_p)) | (rank == 0), p, np.float32(0))
    u = uniform(pos, s.seed)[()] * p.sum(dtype=np.float32)
    return int(order[int(np.argmax(np.cumsum(p, dtype=np.float32) > u))])


def order_key(x: np.ndarray) -> np.ndarray:
    """`kernels.sample_exact.order_key`: i32 keys in the order of the f32 values."""
    b = np.asarray(x, np.float32).view(np.int32)
    return b ^ ((b >> 31) & np.int32(0x7FFFFFFF))


def exact_kept(logits: np.ndarray, s: Sampling) -> tuple[np.ndarray, np.ndarray]:
    """The tokens `kernels.sample_exact` keeps (a mask) and their unnormalized
    probabilities, with the k-th largest key and the top-p cut found exactly (by sorting,
    not bit by bit). Sums are f32: a cut within rounding of a boundary may part from the
    device's."""
    x = np.asarray(logits, np.float32)
    key = order_key(x)
    v = x.size
    kth = np.int32(np.partition(key, v - s.top_k)[v - s.top_k]) if 0 < s.top_k < v \
        else np.int32(-2**31)
    inv = np.float32(1.0 / s.temperature)
    e = np.exp(x * inv - x.max() * inv).astype(np.float32)
    kept = key >= kth
    if s.top_p < 1.0:
        need = e[kept].sum(dtype=np.float32) * np.float32(s.top_p)
        # the mass of the kept keys strictly above each key: keep a key below need
        desc = np.argsort(-key[kept], kind="stable")
        ks, es = key[kept][desc], e[kept][desc]
        first = np.searchsorted(-ks, -ks, side="left")     # where each key's run starts
        above = (np.cumsum(es, dtype=np.float32) - es)[first]
        kept &= key >= ks[above < need].min()
    return kept, e


def sample_exact(logits: np.ndarray, pos: int, s: Sampling) -> int:
    """`kernels.sample_exact` on the host: the kept tokens (`exact_kept`), one draw, and
    the first token in vocabulary order whose running kept mass passes it."""
    kept, e = exact_kept(logits, s)
    w = np.where(kept, e, np.float32(0))
    u = uniform(pos, s.seed)[()] * w.sum(dtype=np.float32)
    past = np.cumsum(w, dtype=np.float32) > u
    return int(np.argmax(past)) if past.any() else int(np.argmax(logits))


class Reference:
    """Qwen3 in numpy from Hugging Face-named weights (bf16 or f32 arrays)."""

    def __init__(self, cfg: Qwen3Config, weights: dict[str, np.ndarray], max_seq: int,
                 prefill_block: int = 16):
        self.cfg = cfg
        self.prefill_block = prefill_block
        f = {k: np.asarray(v).astype(np.float32) for k, v in weights.items()}
        self.embed = f["model.embed_tokens.weight"]
        self.head = self.embed if cfg.tie_word_embeddings else f["lm_head.weight"]
        self.final_norm = f["model.norm.weight"]
        self.layers = []
        for i in range(cfg.num_layers):
            p = f"model.layers.{i}."
            self.layers.append({
                "qkv": np.concatenate([f[p + f"self_attn.{n}_proj.weight"] for n in "qkv"]),
                "o": f[p + "self_attn.o_proj.weight"],
                "gate": f[p + "mlp.gate_proj.weight"], "up": f[p + "mlp.up_proj.weight"],
                "down": f[p + "mlp.down_proj.weight"],
                "attn_norm": f[p + "input_layernorm.weight"],
                "mlp_norm": f[p + "post_attention_layernorm.weight"],
                "q_norm": f[p + "self_attn.q_norm.weight"],
                "k_norm": f[p + "self_attn.k_norm.weight"],
            })
        shape = (cfg.num_kv_heads, max_seq, cfg.head_dim)
        self.k = [np.zeros(shape, np.float32) for _ in range(cfg.num_layers)]
        self.v = [np.zeros(shape, np.float32) for _ in range(cfg.num_layers)]
        self.cos, self.sin = rope_tables(cfg, max_seq)

    def _norm_proj(self, h: np.ndarray, w_norm: np.ndarray, w: np.ndarray) -> np.ndarray:
        """inv * (W bf16(h * w_norm)) for rows of h."""
        eps = np.float32(self.cfg.rms_norm_eps)
        inv = 1.0 / np.sqrt((h * h).mean(axis=-1, keepdims=True, dtype=np.float32) + eps)
        return (bf16_round(h * w_norm) @ w.T) * inv

    def _head_norm_rope(self, x: np.ndarray, w: np.ndarray, pos: np.ndarray) -> np.ndarray:
        eps = np.float32(self.cfg.rms_norm_eps)
        x = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w
        half = self.cfg.head_dim // 2
        c, s = self.cos[pos][:, None, :], self.sin[pos][:, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

    def forward(self, tokens: np.ndarray, start: int, prefill: bool) -> np.ndarray:
        """Hidden states of `tokens` at positions start.. (the cache holds 0..start-1)."""
        cfg = self.cfg
        t = len(tokens)
        pos = np.arange(start, start + t)
        nh, nkv, d, g = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.group
        h = self.embed[tokens].copy()
        for li, lw in enumerate(self.layers):
            qkv = self._norm_proj(h, lw["attn_norm"], lw["qkv"])
            q = self._head_norm_rope(qkv[:, :nh * d].reshape(t, nh, d), lw["q_norm"], pos)
            k = self._head_norm_rope(qkv[:, nh * d:(nh + nkv) * d].reshape(t, nkv, d),
                                     lw["k_norm"], pos)
            v = qkv[:, (nh + nkv) * d:].reshape(t, nkv, d)
            self.k[li][:, pos] = bf16_round(k).transpose(1, 0, 2)
            self.v[li][:, pos] = bf16_round(v).transpose(1, 0, 2)
            if prefill:
                q = bf16_round(q)
            out = np.empty((t, nh, d), np.float32)
            for head in range(nh):
                keys = self.k[li][head // g, :start + t]
                vals = self.v[li][head // g, :start + t]
                if prefill and start == 0:
                    out[:, head] = flash_attention(q[:, head], keys, vals,
                                                   self.prefill_block)
                    continue
                s = (q[:, head] @ keys.T) / np.float32(np.sqrt(d))
                s = np.where(np.arange(start + t)[None, :] <= pos[:, None], s, -np.inf)
                p = np.exp(s - s.max(axis=1, keepdims=True))
                out[:, head] = (p @ vals) / p.sum(axis=1, keepdims=True)
            h = h + bf16_round(out.reshape(t, nh * d)) @ lw["o"].T
            gate = self._norm_proj(h, lw["mlp_norm"], lw["gate"])
            up = self._norm_proj(h, lw["mlp_norm"], lw["up"])
            h = h + bf16_round(gate / (1.0 + np.exp(-gate)) * up) @ lw["down"].T
        return h

    def logits(self, h_last: np.ndarray) -> np.ndarray:
        return self._norm_proj(h_last[None, :], self.final_norm, self.head)[0]

    def generate(self, prompt: list[int], new_tokens: int, sampling: Sampling | None = None,
                 candidates: int = 64) -> tuple[list[int], list[np.ndarray]]:
        """The engine's schedule: prefill all but the last prompt token, then one decode
        step per token (the first from the last prompt token). Returns every token and
        the logits of each step."""
        s = sampling or Sampling()
        tokens = list(prompt)
        if len(tokens) > 1:
            self.forward(np.array(tokens[:-1]), 0, prefill=True)
        all_logits = []
        for _ in range(new_tokens):
            pos = len(tokens) - 1
            h = self.forward(np.array(tokens[-1:]), pos, prefill=False)
            logits = self.logits(h[-1])
            all_logits.append(logits)
            tokens.append(sample(logits, pos, s, candidates))
        return tokens, all_logits
