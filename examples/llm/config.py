"""Qwen3 model shapes: the published sizes (Hugging Face `Qwen/Qwen3-*` config.json files),
a tiny one for the CPU interpreter, and reading a checkpoint's own config.json."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any


class CheckpointError(ValueError):
    """A checkpoint directory or config.json the engine cannot use; the message names the
    file (or field) and what is wrong. A ValueError, so `except ValueError` still works."""

    # KeyError (a subclass below) would quote the message: keep it as written
    __str__ = Exception.__str__


class CheckpointFileError(CheckpointError, FileNotFoundError):
    """A file the checkpoint needs is not there (config.json, a safetensors shard)."""


class MissingTensorError(CheckpointError, KeyError):
    """A tensor the config calls for is in none of the checkpoint's files."""


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
        # every size must be a positive int: 0 divides by zero below, a negative or a bool
        # one would allocate nonsense, a float one would be truncated somewhere later
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "int" and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{self.name}: {f.name} must be a positive integer, got {v!r}")
        if not (isinstance(self.rope_theta, (int, float)) and math.isfinite(self.rope_theta)
                and self.rope_theta > 0):
            raise ValueError(f"{self.name}: rope_theta must be a positive number, "
                             f"got {self.rope_theta!r}")
        if not (isinstance(self.rms_norm_eps, (int, float)) and math.isfinite(self.rms_norm_eps)
                and self.rms_norm_eps >= 0):
            raise ValueError(f"{self.name}: rms_norm_eps must be a number >= 0, "
                             f"got {self.rms_norm_eps!r}")
        if not isinstance(self.tie_word_embeddings, bool):
            raise ValueError(f"{self.name}: tie_word_embeddings must be true or false, "
                             f"got {self.tie_word_embeddings!r}")
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


def _int_field(cfg: dict[str, Any], key: str, default: int | None = None) -> int:
    """An integer field of config.json (JSON may write 2560.0): a missing one without a
    default, a string or a fraction is refused instead of failing inside int() or being
    truncated; null is read as absent, as transformers does (num_key_value_heads null: as
    many as the query heads). Its range is Qwen3Config's to check."""
    v = cfg.get(key)
    if v is None:
        v = default
    if v is None:
        raise CheckpointError(f"config.json has no {key!r}")
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise CheckpointError(f"config.json: {key} = {v!r} is not an integer")
    return v


def _float_field(cfg: dict[str, Any], key: str, default: float) -> float:
    v = cfg.get(key)
    if v is None:                            # absent or null: transformers' default
        v = default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise CheckpointError(f"config.json: {key} = {v!r} is not a number")
    return float(v)


def _rope_theta(cfg: dict[str, Any]) -> float:
    """RoPE's base, from the top level (transformers 4.x) or from `rope_parameters`
    (transformers 5 writes {"rope_type": "default", "rope_theta": ...} there and no
    top-level rope_theta; `rope_scaling` is its older name). Reading the top level alone
    ran such a checkpoint at the default base 10000 instead of Qwen3's 1e6, wrong tokens
    without a word. Only the default RoPE is implemented: a scaled one (YaRN, dynamic,
    linear, ...) or a partial rotary factor is refused."""
    found: dict[str, float] = {}
    if cfg.get("rope_theta") is not None:
        found["rope_theta"] = _float_field(cfg, "rope_theta", 10000.0)
    for key in ("rope_parameters", "rope_scaling"):
        rope = cfg.get(key)
        if rope is None or rope == {}:
            continue
        if not isinstance(rope, dict):
            raise CheckpointError(f"config.json: {key} = {rope!r} is not an object")
        kind = rope.get("rope_type", rope.get("type", "default"))
        if kind != "default":
            raise CheckpointError(f"config.json: {key} with rope_type {kind!r} is not "
                                  f"supported (the engine implements the default RoPE, no "
                                  f"scaling): {rope}")
        if rope.get("partial_rotary_factor", 1.0) != 1.0:
            raise CheckpointError(f"config.json: {key}: partial_rotary_factor "
                                  f"{rope['partial_rotary_factor']!r} is not supported")
        if rope.get("rope_theta") is not None:
            found[f"{key}.rope_theta"] = _float_field(rope, "rope_theta", 10000.0)
    if len(set(found.values())) > 1:
        raise CheckpointError(f"config.json gives two RoPE bases: "
                              f"{', '.join(f'{k} = {v:g}' for k, v in found.items())}")
    return next(iter(found.values()), 10000.0)   # transformers' Qwen3Config default


def from_hf_dict(cfg: dict[str, Any], name: str = "checkpoint") -> Qwen3Config:
    """A config from a Hugging Face config.json dictionary (Qwen3ForCausalLM). What the
    engine does not implement (biases, another activation, sliding windows, RoPE scaling)
    is refused rather than ignored, since ignoring it would give wrong tokens silently."""
    if not isinstance(cfg, dict):
        raise CheckpointError(f"config.json holds a {type(cfg).__name__}, not an object")
    kinds = cfg.get("architectures") or []
    if isinstance(kinds, str):
        kinds = [kinds]
    if not isinstance(kinds, list):
        raise CheckpointError(f"config.json: architectures = {kinds!r} is not a list of "
                              "class names")
    if cfg.get("model_type") not in (None, "qwen3") or (kinds and "Qwen3ForCausalLM" not in kinds):
        raise CheckpointError(f"not a Qwen3 causal LM config: model_type="
                              f"{cfg.get('model_type')!r}, architectures={kinds}")
    if cfg.get("quantization_config") is not None:
        q = cfg["quantization_config"]
        method = q.get("quant_method", q) if isinstance(q, dict) else q
        raise CheckpointError(f"config.json: a quantized checkpoint (quantization_config: "
                              f"{method!r}) is not supported; the engine reads bf16 (or "
                              "f16/f32) weights, e.g. the checkpoint without the -FP8/-AWQ "
                              "suffix")
    rope_theta = _rope_theta(cfg)
    layer_types = cfg.get("layer_types") or []
    unsupported = {"attention_bias": cfg.get("attention_bias") not in (None, False),
                   "hidden_act": cfg.get("hidden_act") not in (None, "silu"),
                   "use_sliding_window": cfg.get("use_sliding_window") not in (None, False),
                   "layer_types": not isinstance(layer_types, list)
                   or any(t != "full_attention" for t in layer_types),
                   "partial_rotary_factor": cfg.get("partial_rotary_factor") not in (None, 1,
                                                                                   1.0)}
    for key, bad in unsupported.items():
        if bad:
            raise CheckpointError(f"config.json: {key} = {cfg[key]!r} is not supported "
                                  "(the engine implements Qwen3: no biases, SiLU, full "
                                  "attention, the whole head rotated)")
    heads = _int_field(cfg, "num_attention_heads")
    hidden = _int_field(cfg, "hidden_size")
    head_dim = cfg.get("head_dim")
    if head_dim is None and heads > 0 and hidden % heads:
        raise CheckpointError(f"config.json has no head_dim and hidden_size {hidden} does not "
                              f"split into {heads} heads")
    tied = cfg.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise CheckpointError(f"config.json: tie_word_embeddings = {tied!r} is not true or "
                              "false")
    try:
        return Qwen3Config(
            name=name,
            hidden_size=hidden,
            num_layers=_int_field(cfg, "num_hidden_layers"),
            num_heads=heads,
            num_kv_heads=_int_field(cfg, "num_key_value_heads", heads),
            intermediate_size=_int_field(cfg, "intermediate_size"),
            vocab_size=_int_field(cfg, "vocab_size"),
            head_dim=(_int_field(cfg, "head_dim") if head_dim is not None
                      else hidden // max(heads, 1)),
            rope_theta=rope_theta,
            rms_norm_eps=_float_field(cfg, "rms_norm_eps", 1e-6),
            tie_word_embeddings=tied,
            max_position_embeddings=_int_field(cfg, "max_position_embeddings", 40960),
        )
    except CheckpointError:
        raise
    except ValueError as e:                  # Qwen3Config's range checks, as the file's
        raise CheckpointError(f"config.json: {e}") from None


def from_checkpoint(directory: str | Path) -> Qwen3Config:
    """The config of a checkpoint directory; every way its config.json can be unusable
    (absent, unreadable, not JSON, wrong fields) is a CheckpointError naming the file."""
    d = Path(directory)
    if not d.is_dir():
        what = "does not exist" if not d.exists() else "is not a directory"
        raise CheckpointFileError(f"checkpoint {d} {what} (give the directory that holds "
                                  "config.json and *.safetensors)")
    path = d / "config.json"
    if not path.is_file():
        raise CheckpointFileError(f"{path}: no such file; a Hugging Face checkpoint directory "
                                  "holds config.json")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not readable JSON: {e}") from None
    try:
        return from_hf_dict(data, name=d.name)
    except CheckpointError as e:
        raise CheckpointError(f"{d}: {e}") from None


def with_layers(cfg: Qwen3Config, num_layers: int) -> Qwen3Config:
    """The same shapes with fewer (or more) layers, for quick runs."""
    return replace(cfg, name=f"{cfg.name}-{num_layers}l", num_layers=num_layers)


def as_dict(cfg: Qwen3Config) -> dict[str, Any]:
    return asdict(cfg)
