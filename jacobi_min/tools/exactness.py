"""Measure losslessness on real prompts: every parallel decoder vs `model.generate(do_sample=False)`.

For each prompt the reference is transformers' greedy generate (explicit
all-ones attention mask, the model's own EOS ids), run once and timed; then
each method decodes the same prompt and must give the same tokens:

- "jacobi n=N": greedy Jacobi decoding with block size N;
- "multiblock n=N": multi-block decoding with rejection recycling (K blocks,
  spawn ratio r, recycling pool as given);
- "recycling n=N": rejection recycling alone (one block, the same pool);
- "prompt lookup": transformers' prompt-lookup decoding (`generate` with
  `prompt_lookup_num_tokens`), the n-gram drafting baseline.

In exact arithmetic all of them always agree. In float32 on CPU they do in
practice; in bf16/fp16 a forward of n tokens and n forwards of one token can
round differently, a near-tie can flip an argmax, and the two outputs part
ways from that position on. `first_divergence` records where (None: identical).

Every method runs right after the reference on the same prompt, so the ratio
reference_seconds / seconds is a like-for-like wall-clock speedup (prefill
included on both sides).

Usage (the fp32 acceptance run: 20 prompts, 128 tokens):

    model, tok = jacobi_min.load(qwen.local_dir())
    report = exactness(model, tok, realtasks.prompts(tok, 10, 10), [4, 16, 64], 128,
                       multiblock_sizes=[16])
    report["methods"]["jacobi n=16"]["exact"], report["methods"]["jacobi n=16"]["total"]

Load with `dtype=torch.bfloat16` to measure bf16 divergence the same way
(the reference generate then runs in bf16 too).
"""
import json
import time
from pathlib import Path

import torch
from tqdm import tqdm

from ..baselines.drafter import ForwardCounter, generate_result
from ..jacobi import jacobi_decode
from ..multiblock import multiblock_decode
from . import realtasks
from .bench import MULTIBLOCK
from .cli import at_least, model_args, with_model


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first position where a and b differ (a prefix differs at its end), or None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@torch.inference_mode()
def reference(model, ids: list[int], max_new_tokens: int) -> list[int]:
    """Greedy generate's new tokens, with an explicit all-ones mask: without one, generate infers a mask from
    pad tokens in the prompt and would hide them, where the parallel decoders attend to every prompt token."""
    x = torch.tensor([ids], device=model.device)
    out = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=max_new_tokens)
    return out[0, len(ids):].tolist()


def methods(model, block_sizes, multiblock_sizes, recycling_sizes, multiblock: dict, lookup_tokens: int | None,
            seed: int) -> dict:
    """name -> decode(ids, max_new_tokens) -> DecodeResult, for every method measured."""
    recycling = multiblock | {"blocks": 1}
    runs = {f"jacobi n={n}": lambda ids, m, n=n: jacobi_decode(model, ids, n, m, seed=seed) for n in block_sizes}
    runs |= {f"multiblock n={n}": lambda ids, m, n=n: multiblock_decode(model, ids, n, m, seed=seed, **multiblock)
             for n in multiblock_sizes}
    runs |= {f"recycling n={n}": lambda ids, m, n=n: multiblock_decode(model, ids, n, m, seed=seed, **recycling)
             for n in recycling_sizes}
    if lookup_tokens:
        counter = ForwardCounter(model)
        runs["prompt lookup"] = lambda ids, m: generate_result(model, counter, ids, m,
                                                               prompt_lookup_num_tokens=lookup_tokens)
    return runs


def exactness(model, tokenizer, prompts, block_sizes, max_new_tokens: int, multiblock_sizes=(), recycling_sizes=(),
              multiblock: dict = MULTIBLOCK, lookup_tokens: int | None = None, seed: int = 0) -> dict:
    """{"methods": {name: row}, "reference_seconds": generate's time per prompt, "reference_tokens":
    its output per prompt}, where row holds
    "exact" (count of prompts with identical output), "total", and per prompt "first_divergence",
    "tpf" and "seconds" (decoding time, prefill included).

    `prompts` are token-id lists, or strings sent as the user's message in the chat template.
    """
    prompts = [realtasks.chat_ids(tokenizer, p) if isinstance(p, str) else list(p) for p in prompts]
    runs = methods(model, block_sizes, multiblock_sizes, recycling_sizes, multiblock, lookup_tokens, seed)
    rows = {name: {"exact": 0, "total": len(prompts), "first_divergence": [], "tpf": [], "seconds": []}
            for name in runs}
    report = {"methods": rows, "reference_seconds": [], "reference_tokens": []}
    for ids in tqdm(prompts, desc="exactness"):
        start = time.perf_counter()
        expected = reference(model, ids, max_new_tokens)
        report["reference_seconds"].append(time.perf_counter() - start)
        report["reference_tokens"].append(expected)
        for name, run in runs.items():
            start = time.perf_counter()
            result = run(ids, max_new_tokens)
            row = rows[name]
            row["seconds"].append(time.perf_counter() - start)
            row["first_divergence"].append(first_divergence(result.tokens, expected))
            row["exact"] += result.tokens == expected
            row["tpf"].append(result.tpf)
    return report


def exactness_command(args, model, tokenizer) -> None:
    """Every decoder against generate on real GSM8K + HumanEval prompts; the report goes to --out."""
    ids = realtasks.prompts(tokenizer, args.prompts // 2, args.prompts - args.prompts // 2)
    report = exactness(model, tokenizer, ids, args.block_sizes, args.max_new_tokens, args.multiblock_sizes,
                       args.recycling_sizes, lookup_tokens=args.prompt_lookup)
    report["meta"] = {"model": args.model, "dtype": str(model.dtype), "max_new_tokens": args.max_new_tokens,
                      "threads": torch.get_num_threads()}
    args.out.write_text(json.dumps(report, indent=1))
    print({name: f"{row['exact']}/{row['total']} exact" for name, row in report["methods"].items()})


def add_commands(commands) -> None:
    p = commands.add_parser("exactness", help="Jacobi vs generate on real GSM8K + HumanEval prompts "
                                              "(needs requirements-qwen.txt)")
    model_args(p, default="qwen2.5-coder-0.5b-instruct")
    p.add_argument("--prompts", type=at_least(2), default=20, help="half GSM8K, half HumanEval")
    p.add_argument("--block-sizes", type=at_least(1), nargs="*", default=[4, 16, 64], help="greedy Jacobi")
    p.add_argument("--multiblock-sizes", type=at_least(1), nargs="*", default=[16],
                   help="multi-block decoding (K = 2, r = 0.25, pool 4)")
    p.add_argument("--recycling-sizes", type=at_least(1), nargs="*", default=[], help="rejection recycling alone (pool 4)")
    p.add_argument("--prompt-lookup", type=at_least(0), default=10, help="prompt-lookup draft length (0: skip)")
    p.add_argument("--max-new-tokens", type=at_least(1), default=128)
    p.add_argument("--out", type=Path, required=True, help="JSON report")
    p.set_defaults(run=with_model(exactness_command))
