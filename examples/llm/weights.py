"""Qwen3 weights on the device, in the engine's layout, from a Hugging Face checkpoint or
made at random on the device.

The engine fuses what shares an input: the q, k and v projections are one [(H + 2 KV) D,
hidden] matrix and gate and up one [2 I, hidden] matrix (gate rows first), so one GEMV
reads them; everything else keeps Hugging Face's shapes ([out, in] for projections). A
tied LM head is the embedding tensor itself.

- `load_checkpoint(dir)`: config.json and every *.safetensors file of the directory
  (read with the `safetensors` package, memory-mapped, as bf16; f32/f16 tensors are
  converted), Hugging Face's names (`model.layers.{i}.self_attn.q_proj.weight`, ...).
- `random_weights(cfg, seed)`: uniform weights with the standard deviation of Hugging
  Face's initializer (0.02) and norm weights in [0.9, 1.1], made on the device by
  `kernels.fill` from (seed, tensor name), so any tensor can be recomputed on the host.
- `save_checkpoint(dir, cfg, tensors)`: the Hugging Face layout (config.json and
  model.safetensors), e.g. to export random weights for `transformers`.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from cutile import api
from cutile.api import Tensor
from cutile.core import bf16

from .config import (
    CheckpointError,
    CheckpointFileError,
    MissingTensorError,
    Qwen3Config,
    from_checkpoint,
)
from .kernels.fill import init_uniform_1d, init_uniform_2d
from .reference import check_seed

BF16 = ml_dtypes.bfloat16
EMBED = "model.embed_tokens.weight"
FINAL_NORM = "model.norm.weight"
LM_HEAD = "lm_head.weight"
INIT_STD = 0.02                              # Hugging Face's initializer_range for Qwen3
Progress = Callable[[int, int, str], None]   # (done, total, what)


def layer_name(i: int, part: str) -> str:
    return f"model.layers.{i}.{part}.weight"


@dataclass
class LayerWeights:
    wqkv: Tensor         # [(H + 2 KV) D, hidden]: q, k, v rows
    wo: Tensor           # [hidden, H D]
    wgu: Tensor          # [2 I, hidden]: gate rows, then up rows
    wd: Tensor           # [hidden, I]
    attn_norm: Tensor    # [hidden]
    mlp_norm: Tensor     # [hidden]
    q_norm: Tensor       # [D]
    k_norm: Tensor       # [D]

    def tensors(self) -> Iterator[Tensor]:
        yield from (self.wqkv, self.wo, self.wgu, self.wd, self.attn_norm, self.mlp_norm,
                    self.q_norm, self.k_norm)


@dataclass
class Weights:
    cfg: Qwen3Config
    embed: Tensor
    lm_head: Tensor      # the embedding itself when tied
    final_norm: Tensor
    layers: list[LayerWeights] = field(default_factory=list)

    def nbytes(self) -> int:
        tensors = [self.embed, self.final_norm, *(t for lw in self.layers for t in lw.tensors())]
        if self.lm_head is not self.embed:
            tensors.append(self.lm_head)
        return sum(t.nbytes for t in tensors)

    def decode_bytes(self) -> int:
        """Bytes of weights one decode step reads: every layer, the final norm, the LM head
        and one embedding row."""
        per_layer = sum(t.nbytes for lw in self.layers for t in lw.tensors())
        row = self.cfg.hidden_size * 2
        return per_layer + self.final_norm.nbytes + self.lm_head.nbytes + row

    def to_hf(self) -> dict[str, np.ndarray]:
        """Every tensor under its Hugging Face name, as bf16 numpy arrays (fused matrices
        split again)."""
        c = self.cfg
        out = {EMBED: self.embed.to_numpy(), FINAL_NORM: self.final_norm.to_numpy()}
        if not c.tie_word_embeddings:
            out[LM_HEAD] = self.lm_head.to_numpy()
        for i, lw in enumerate(self.layers):
            qkv = lw.wqkv.to_numpy()
            gu = lw.wgu.to_numpy()
            parts = {
                "self_attn.q_proj": qkv[:c.q_size], "self_attn.k_proj":
                qkv[c.q_size:c.q_size + c.kv_size], "self_attn.v_proj": qkv[c.q_size + c.kv_size:],
                "self_attn.o_proj": lw.wo.to_numpy(), "mlp.gate_proj": gu[:c.intermediate_size],
                "mlp.up_proj": gu[c.intermediate_size:], "mlp.down_proj": lw.wd.to_numpy(),
                "input_layernorm": lw.attn_norm.to_numpy(),
                "post_attention_layernorm": lw.mlp_norm.to_numpy(),
                "self_attn.q_norm": lw.q_norm.to_numpy(), "self_attn.k_norm": lw.k_norm.to_numpy(),
            }
            out.update({layer_name(i, k): np.ascontiguousarray(v) for k, v in parts.items()})
        return out


# -- from a checkpoint ------------------------------------------------------------------------


def _as_bf16(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == BF16 else np.asarray(a, np.float32).astype(BF16)


# safetensors dtypes the loader converts to bf16; anything else (integers of a quantized
# checkpoint, bool) would be converted to meaningless values, so it is refused
FLOAT_DTYPES = ("BF16", "F16", "F32", "F64")


class _Checkpoint:
    """Tensors by name across a checkpoint's safetensors files (memory-mapped). Every way
    the files can be unusable is a CheckpointError naming the file or tensor."""

    def __init__(self, directory: Path):
        from safetensors import SafetensorError, safe_open

        _check_index(directory)
        files = sorted(directory.glob("*.safetensors"))
        if not files:
            raise CheckpointFileError(f"no *.safetensors file in {directory}")
        self._handles = []
        for f in files:
            try:
                self._handles.append((f, safe_open(str(f), framework="numpy")))
            except (SafetensorError, OSError) as e:
                raise CheckpointError(f"{f}: not a readable safetensors file ({e}); is it "
                                      "truncated?") from None
        self._where: dict[str, tuple[Path, Any]] = {}
        for f, h in self._handles:
            for name in h.keys():
                if name in self._where:
                    raise CheckpointError(f"{name} is in both {self._where[name][0].name} and "
                                          f"{f.name}: which one the model uses is unclear")
                self._where[name] = (f, h)
        self.used: set[str] = set()

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def names(self) -> set[str]:
        return set(self._where)

    def get(self, name: str, shape: tuple[int, ...], hint: str = "") -> np.ndarray:
        if name not in self._where:
            raise MissingTensorError(f"checkpoint has no tensor {name}{hint}")
        f, h = self._where[name]
        # shape and dtype from the header, before a wrong tensor is read in full
        meta = h.get_slice(name)
        got, dtype = tuple(meta.get_shape()), meta.get_dtype()
        if got != shape:
            raise CheckpointError(f"{name}: shape {got}, the config says {shape}")
        if dtype not in FLOAT_DTYPES:
            raise CheckpointError(f"{name} in {f.name}: dtype {dtype}; the engine reads "
                                  f"floating-point weights ({', '.join(FLOAT_DTYPES)}), not "
                                  "quantized ones")
        self.used.add(name)
        a = h.get_tensor(name)
        if a.dtype == BF16:
            return a
        with np.errstate(over="ignore"):
            out = _as_bf16(a)
        # finite values past bf16's range became inf in the conversion: every logit NaN
        over = ~np.isfinite(out.astype(np.float32)) & np.isfinite(a)
        if over.any():
            raise CheckpointError(f"{name} in {f.name}: {dtype} value {a[over].flat[0]:g} "
                                  "is past bf16's range (the engine computes in bf16)")
        return out


def _check_index(directory: Path) -> None:
    """A sharded checkpoint's index (`*.safetensors.index.json`) names its shards: one
    that is absent is named here, rather than as the first tensor it would have held."""
    for index in sorted(directory.glob("*.safetensors.index.json")):
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
            shards = set(weight_map.values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"{index}: not a safetensors index (a JSON object with a "
                                  f"weight_map): {e!r}") from None
        missing = sorted(str(s) for s in shards if not (directory / str(s)).is_file())
        if missing:
            raise CheckpointFileError(f"{index.name} names shards that are not in "
                                      f"{directory}: {', '.join(missing)}")


def load_checkpoint(directory: str | Path, progress: Progress | None = None,
                    cfg: Qwen3Config | None = None) -> Weights:
    """The weights of a checkpoint directory. `cfg`: the shapes to read (default: the
    checkpoint's config.json); a cfg of fewer layers reads the first ones. A tensor the
    config does not account for is refused (a bias, a layer past the config's count), as
    is a tied config whose checkpoint holds a different LM head: either would run a model
    other than the checkpoint's without a word."""
    d = Path(directory)
    c = cfg or from_checkpoint(d)
    ck = _Checkpoint(d)
    h, i_size = c.hidden_size, c.intermediate_size
    embed_np = ck.get(EMBED, (c.vocab_size, h))
    embed = api.from_numpy(embed_np)
    if c.tie_word_embeddings:
        head = embed
        if LM_HEAD in ck and not np.array_equal(
                ck.get(LM_HEAD, (c.vocab_size, h)).view(np.uint16), embed_np.view(np.uint16)):
            raise CheckpointError(f"{d}: config.json says tie_word_embeddings true, but the "
                                  f"checkpoint's {LM_HEAD} differs from {EMBED}")
    else:
        head = api.from_numpy(ck.get(LM_HEAD, (c.vocab_size, h),
                                     " (config.json says tie_word_embeddings false; a tied "
                                     "checkpoint has none)"))
    w = Weights(c, embed, head, api.from_numpy(ck.get(FINAL_NORM, (h,))))
    for i in range(c.num_layers):
        def get(part: str, shape: tuple[int, ...], i: int = i) -> np.ndarray:
            return ck.get(layer_name(i, part), shape)

        qkv = np.concatenate([get("self_attn.q_proj", (c.q_size, h)),
                              get("self_attn.k_proj", (c.kv_size, h)),
                              get("self_attn.v_proj", (c.kv_size, h))])
        gu = np.concatenate([get("mlp.gate_proj", (i_size, h)), get("mlp.up_proj", (i_size, h))])
        w.layers.append(LayerWeights(
            wqkv=api.from_numpy(qkv), wo=api.from_numpy(get("self_attn.o_proj", (h, c.q_size))),
            wgu=api.from_numpy(gu), wd=api.from_numpy(get("mlp.down_proj", (h, i_size))),
            attn_norm=api.from_numpy(get("input_layernorm", (h,))),
            mlp_norm=api.from_numpy(get("post_attention_layernorm", (h,))),
            q_norm=api.from_numpy(get("self_attn.q_norm", (c.head_dim,))),
            k_norm=api.from_numpy(get("self_attn.k_norm", (c.head_dim,)))))
        if progress:
            progress(i + 1, c.num_layers, "layers loaded")
    _check_unused(d, ck, c, partial=cfg is not None)
    return w


def _check_unused(d: Path, ck: _Checkpoint, c: Qwen3Config, partial: bool) -> None:
    """Tensors the engine did not read. With a caller's cfg (`partial`), the layers past
    its count are expected (`generate.py --layers`); anything else is refused."""
    extra = ck.names() - ck.used - {LM_HEAD}
    if partial:
        extra = {n for n in extra if not (n.startswith("model.layers.")
                                          and n.split(".")[2].isdigit()
                                          and int(n.split(".")[2]) >= c.num_layers)}
    if extra:
        shown = sorted(extra)[:5]
        raise CheckpointError(f"{d}: {len(extra)} tensor(s) the config does not account for "
                              f"(the engine would ignore them): {', '.join(shown)}"
                              f"{' ...' if len(extra) > 5 else ''}")


# -- random -----------------------------------------------------------------------------------


def tensor_seed(seed: int, name: str) -> int:
    """The u32 seed of one tensor: the run's seed and the tensor's name."""
    return (zlib.crc32(name.encode()) ^ (seed * 0x9E3779B1)) & 0xFFFFFFFF


def random_spec(name: str) -> tuple[float, float]:
    """(scale, offset) of a tensor's uniform values: norms in [0.9, 1.1], everything else
    with standard deviation INIT_STD."""
    if name.endswith("norm.weight") or "layernorm" in name:
        return 0.1, 1.0
    return INIT_STD * math.sqrt(3.0), 0.0


def _random(shape: tuple[int, ...], seed: int, name: str) -> Tensor:
    scale, offset = random_spec(name)
    s = tensor_seed(seed, name)
    if len(shape) == 1:
        t = api.empty(list(shape), bf16).partition([min(1024, _pow2(shape[0]))])
        t = init_uniform_1d(t, s, scale, offset).sync()[0]
    else:
        t = api.empty(list(shape), bf16).partition([16, min(256, _pow2(shape[1]))])
        t = init_uniform_2d(t, s, scale, offset).sync()[0]
    return t.unpartition()


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


# The engine's tensors made at random, and the Hugging Face tensors they hold (rows).
FUSED = {"wqkv": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
         "wgu": ("mlp.gate_proj", "mlp.up_proj")}


def random_weights(cfg: Qwen3Config, seed: int = 0, progress: Progress | None = None
                   ) -> Weights:
    """Random weights made on the device; a fused matrix is drawn as one tensor (named
    `model.layers.{i}.wqkv` / `.wgu` for its seed). `seed` in [0, 2**32): the device's
    seeds are u32, so a larger one would alias a smaller one's weights."""
    check_seed(seed)
    c = cfg
    h = c.hidden_size
    embed = _random((c.vocab_size, h), seed, EMBED)
    head = embed if c.tie_word_embeddings else _random((c.vocab_size, h), seed, LM_HEAD)
    w = Weights(c, embed, head, _random((h,), seed, FINAL_NORM))
    for i in range(c.num_layers):
        def r(part: str, shape: tuple[int, ...], i: int = i) -> Tensor:
            return _random(shape, seed, layer_name(i, part))

        w.layers.append(LayerWeights(
            wqkv=r("wqkv", (c.qkv_size, h)), wo=r("self_attn.o_proj", (h, c.q_size)),
            wgu=r("wgu", (2 * c.intermediate_size, h)),
            wd=r("mlp.down_proj", (h, c.intermediate_size)),
            attn_norm=r("input_layernorm", (h,)), mlp_norm=r("post_attention_layernorm", (h,)),
            q_norm=r("self_attn.q_norm", (c.head_dim,)),
            k_norm=r("self_attn.k_norm", (c.head_dim,))))
        if progress:
            progress(i + 1, c.num_layers, "layers made")
    return w


def save_checkpoint(directory: str | Path, cfg: Qwen3Config, tensors: dict[str, np.ndarray]
                    ) -> Path:
    """config.json and model.safetensors in Hugging Face's layout (bf16)."""
    from safetensors.numpy import save_file

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg.to_hf(), indent=2) + "\n")
    save_file({k: np.ascontiguousarray(_as_bf16(v)) for k, v in tensors.items()},
              str(d / "model.safetensors"), metadata={"format": "pt"})
    return d
