"""Qwen3 model shapes: the published sizes (Hugging Face `Qwen/Qwen3-*` config.json files),
a tiny one for the CPU interpreter, and reading a checkpoint's own config.json."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Qwen3Config:
    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int = 151936
    head_dim: int = 128
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    max_position_embeddings: int = 40960

    def __post_init__(self) -> None:
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"{self.name}: {self.num_heads} query heads do not split into "
                             f"{self.num_kv_heads} key/value groups")
        if self.head_dim % 2:
            raise ValueError(f"{self.name}: RoPE needs an even head_dim, got {self.head_dim}")

    @property
    def group(self) -> int:
        """Query heads per key/value head (grouped-query attention)."""
        return self.num_heads // self.num_kv_heads

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def qkv_size(self) -> int:
        return self.q_size + 2 * self.kv_size

    def param_count(self) -> int:
        """Parameters, counting a tied LM head once (as Hugging Face does)."""
        h, i = self.hidden_size, self.intermediate_size
        per_layer = (h * self.qkv_size + self.q_size * h + 3 * h * i
                     + 2 * h + 2 * self.head_dim)
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_layers * per_layer + h + head

    def to_hf(self) -> dict[str, Any]:
        """A Hugging Face `Qwen3Config`-compatible config.json dictionary."""
        return {
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "intermediate_size": self.intermediate_size,
            "vocab_size": self.vocab_size,
            "rope_theta": self.rope_theta,
            "rms_norm_eps": self.rms_norm_eps,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
            "hidden_act": "silu",
            "attention_bias": False,
            "rope_scaling": None,
            "torch_dtype": "bfloat16",
        }

    def describe(self) -> str:
        return (f"{self.name}: {self.num_layers} layers, hidden {self.hidden_size}, "
                f"{self.num_heads} heads / {self.num_kv_heads} kv heads x {self.head_dim}, "
                f"MLP {self.intermediate_size}, vocab {self.vocab_size}, "
                f"{'tied' if self.tie_word_embeddings else 'untied'} LM head, "
                f"{human(self.param_count())} parameters")


def human(n: float, unit: str = "") -> str:
    """1234567 -> '1.23M' (with `unit` appended)."""
    for div, suffix in ((1e12, "T"), (1e9, "G" if unit else "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.2f}{suffix}{unit}"
    return f"{n:.0f}{unit}"


# From Hugging Face's Qwen/Qwen3-0.6B, -1.7B, -4B and -8B config.json (rope_theta 1e6,
# rms_norm_eps 1e-6, head_dim 128, vocab 151936, 40960 positions in all four).
PRESETS: dict[str, Qwen3Config] = {
    "qwen3-0.6b": Qwen3Config("qwen3-0.6b", hidden_size=1024, num_layers=28, num_heads=16,
                              num_kv_heads=8, intermediate_size=3072),
    "qwen3-1.7b": Qwen3Config("qwen3-1.7b", hidden_size=2048, num_layers=28, num_heads=16,
                              num_kv_heads=8, intermediate_size=6144),
    "qwen3-4b": Qwen3Config("qwen3-4b", hidden_size=2560, num_layers=36, num_heads=32,
                            num_kv_heads=8, intermediate_size=9728),
    "qwen3-8b": Qwen3Config("qwen3-8b", hidden_size=4096, num_layers=36, num_heads=32,
                            num_kv_heads=8, intermediate_size=12288,
                            tie_word_embeddings=False),
    # A few layers of small width for the CPU interpreter: grouped queries (2 per kv head),
    # an untied head, a hidden size and MLP that are not powers of two (ragged tiles).
    "tiny": Qwen3Config("tiny", hidden_size=96, num_layers=2, num_heads=4, num_kv_heads=2,
                        intermediate_size=160, vocab_size=320, head_dim=32,
                        tie_word_embeddings=False, max_position_embeddings=512),
}


def preset(name: str) -> Qwen3Config:
    key = name.lower()
    if key not in PRESETS:
        raise KeyError(f"no config named {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[key]


def from_hf_dict(cfg: dict[str, Any], name: str = "checkpoint") -> Qwen3Config:
    """A config from a Hugging Face config.json dictionary (Qwen3ForCausalLM)."""
    kinds = cfg.get("architectures") or []
    if cfg.get("model_type") not in (None, "qwen3") or (kinds and "Qwen3ForCausalLM" not in kinds):
        raise ValueError(f"not a Qwen3 causal LM config: model_type={cfg.get('model_type')!r}, "
                         f"architectures={kinds}")
    if cfg.get("rope_scaling"):
        raise ValueError(f"rope_scaling {cfg['rope_scaling']} is not supported")
    heads = int(cfg["num_attention_heads"])
    hidden = int(cfg["hidden_size"])
    return Qwen3Config(
        name=name,
        hidden_size=hidden,
        num_layers=int(cfg["num_hidden_layers"]),
        num_heads=heads,
        num_kv_heads=int(cfg.get("num_key_value_heads", heads)),
        intermediate_size=int(cfg["intermediate_size"]),
        vocab_size=int(cfg["vocab_size"]),
        head_dim=int(cfg.get("head_dim") or hidden // heads),
        rope_theta=float(cfg.get("rope_theta", 10000.0)),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        max_position_embeddings=int(cfg.get("max_position_embeddings", 40960)),
    )


def from_checkpoint(directory: str | Path) -> Qwen3Config:
    path = Path(directory) / "config.json"
    return from_hf_dict(json.loads(path.read_text()), name=Path(directory).name)


def with_layers(cfg: Qwen3Config, num_layers: int) -> Qwen3Config:
    """The same shapes with fewer (or more) layers, for quick runs."""
    return replace(cfg, name=f"{cfg.name}-{num_layers}l", num_layers=num_layers)


def as_dict(cfg: Qwen3Config) -> dict[str, Any]:
    return asdict(cfg)
