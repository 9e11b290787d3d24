"""Correctness of the Qwen3 engine against Hugging Face transformers on the GPU, with the
same random weights.

    python benchmarks/llm_hf_check.py                          # Qwen3-4B, 64 decode steps
    python benchmarks/llm_hf_check.py --config qwen3-0.6b --layers 4 --steps 16

The engine prefills a random prompt and decodes greedily. Hugging Face's
Qwen3ForCausalLM, once in bf16 (as the checkpoints run) and once in f32 (the same bf16
weights, upcast), reads the engine's whole sequence in one forward pass (teacher forcing),
so its logits at the prompt's last position and at every decode step are compared with the
engine's on the same tokens; and it decodes greedily on its own from the prompt, to see
how long its tokens stay the engine's. Passes when every step's logits are within
`--tol` of the largest logit (bf16 tolerance: the engine keeps f32 activations where
transformers' bf16 model rounds each op) against both, and greedy decoding agrees for at
least `--greedy-steps` steps against the f32 model (bf16 transformers' own rounding flips
near-ties; its agreement is reported).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_tools as lt
from llm.config import preset, with_layers
from llm.model import Engine
from llm.plan import plan_for
from llm.weights import random_weights


def engine_run(weights: Any, prompt: list[int], steps: int, plan: Any = None
               ) -> tuple[list[int], np.ndarray]:
    engine = Engine(weights, len(prompt) + steps + 8, plan)
    engine.load_prompt(prompt)
    logits = []
    for _ in range(steps):
        engine.decode_step()
        logits.append(engine.read_logits())
    return [int(t) for t in engine.token_ids()], np.stack(logits)


def hf_compare(cfg: Any, weights: Any, prompt: list[int], tokens: list[int],
               logits: np.ndarray, dtype: str) -> tuple[dict[str, Any], np.ndarray]:
    import torch

    model = lt.hf_model(cfg, weights, dtype)
    steps = len(logits)
    p = len(prompt)
    with torch.no_grad():
        seq = torch.tensor([tokens[:-1]], device="cuda")
        ref = model(seq).logits[0, p - 1:p - 1 + steps].float().cpu().numpy()
        gen = model.generate(torch.tensor([prompt], device="cuda"), max_new_tokens=steps,
                             do_sample=False, top_k=None, top_p=None, temperature=None)
        # transformers against itself: its forward pass over its own greedy sequence
        # (another kernel shape than generate's cached steps) picks the same tokens until
        # a near-tie flips
        again = model(gen[:, :-1]).logits[0, p - 1:].float().argmax(dim=-1).tolist()
    own = gen[0, p:].tolist()
    ours = tokens[p:p + steps]
    diverge = next((i for i, (a, b) in enumerate(zip(own, ours, strict=False)) if a != b),
                   min(len(own), len(ours)))
    self_diverge = next((i for i, (a, b) in enumerate(zip(own, again, strict=False))
                         if a != b), min(len(own), len(again)))
    scale = np.abs(ref).max(axis=1)
    # where the engine and transformers part: how far apart the two tokens' logits are in
    # transformers' own (teacher-forced, same prefix) logits, of the largest logit
    gap = (float((ref[diverge, own[diverge]] - ref[diverge, ours[diverge]]) / scale[diverge])
           if diverge < min(len(own), len(ours)) else None)
    err = np.abs(logits - ref).max(axis=1)
    # teacher-forced (the same prefix at every step): where the engine's token is not
    # transformers' argmax, how far apart the two are in transformers' logits, of the
    # largest; a disagreement below bf16's own rounding is a near-tie, not an error
    picked = np.array(ours)
    best = ref.argmax(axis=1)
    gaps = [round(float((ref[i, best[i]] - ref[i, picked[i]]) / scale[i]), 5)
            for i in np.flatnonzero(best != picked)]
    del model
    torch.cuda.empty_cache()
    return {
        "dtype": dtype,
        "max_rel_err": float((err / scale).max()),
        "rel_err_by_step": [round(float(e), 5) for e in err / scale],
        "mean_abs_err": float(np.abs(logits - ref).mean()),
        "argmax_agree": float((best == picked).mean()),
        "argmax_disagree_gaps": gaps,
        "greedy_agree_steps": diverge,
        "gap_at_divergence": gap,
        "hf_self_agree_steps": self_diverge,
    }, ref


def check(cfg: Any, steps: int, prompt_len: int, seed: int = 0, plan: Any = None
          ) -> dict[str, Any]:
    weights = random_weights(cfg, seed)
    prompt = [int(t) for t in np.random.default_rng(seed).integers(0, cfg.vocab_size,
                                                                    prompt_len)]
    tokens, logits = engine_run(weights, prompt, steps, plan)
    bf16, a = hf_compare(cfg, weights, prompt, tokens, logits, "bfloat16")
    f32, b = hf_compare(cfg, weights, prompt, tokens, logits, "float32")
    # transformers' bf16 model against its f32 model on the same tokens: the size of bf16's
    # own rounding, the yardstick for the engine's distance from either
    floor = float((np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)).max())
    return {"config": cfg.name, "steps": steps, "prompt_len": prompt_len,
            "attn_exact": (plan or plan_for(cfg)).attn_exact,
            "hf_bf16_vs_f32_max_rel_err": floor, "bf16": bf16, "f32": f32}


def verdict(r: dict[str, Any], tol: float, greedy_steps: int) -> list[str]:
    bad = [f"{d}: logits off by {r[d]['max_rel_err']:.3g} of the largest (> {tol})"
           for d in ("bf16", "f32") if r[d]["max_rel_err"] > tol]
    need = min(greedy_steps, r["steps"])
    if r["f32"]["greedy_agree_steps"] < need:
        bad.append(f"greedy tokens agree with f32 transformers for "
                   f"{r['f32']['greedy_agree_steps']} steps (< {need})")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="qwen3-4b")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--tol", type=float, default=5e-2)
    ap.add_argument("--greedy-steps", type=int, default=32)
    ap.add_argument("--exact-attention", action="store_true",
                    help="decode attention with f32-accurate MMA inputs (Plan.attn_exact)")
    ap.add_argument("--json")
    args = ap.parse_args()
    cfg = preset(args.config)
    if args.layers:
        cfg = with_layers(cfg, args.layers)
    plan = plan_for(cfg).with_(attn_exact=True) if args.exact_attention else None
    r = check(cfg, args.steps, args.prompt_len, plan=plan)
    for d in ("bf16", "f32"):
        x = r[d]
        print(f"vs transformers {d}: max logit error {x['max_rel_err']:.4f} of the largest "
              f"(mean |diff| {x['mean_abs_err']:.4f}); argmax agrees on "
              f"{100 * x['argmax_agree']:.0f}% of steps; own greedy decoding agrees for "
              f"{x['greedy_agree_steps']}/{args.steps} steps (the two tokens' logits "
              f"{x['gap_at_divergence']} of the largest apart there); transformers' own "
              f"forward pass agrees with its generate for {x['hf_self_agree_steps']} steps")
    for d in ("bf16", "f32"):
        gaps = r[d]["argmax_disagree_gaps"]
        print(f"teacher-forced vs transformers {d}: {args.steps - len(gaps)}/{args.steps} "
              f"steps pick its argmax" + (f"; the others' top-two gaps, of the largest "
                                         f"logit: {', '.join(f'{g:.4f}' for g in gaps)}"
                                         if gaps else ""))
    print(f"transformers bf16 vs transformers f32: max logit error "
          f"{r['hf_bf16_vs_f32_max_rel_err']:.4f} of the largest")
    bad = verdict(r, args.tol, args.greedy_steps)
    print("PASS" if not bad else "FAIL: " + "; ".join(bad))
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
