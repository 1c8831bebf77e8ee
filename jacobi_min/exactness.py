"""Measure losslessness on real prompts: Jacobi decoding vs `model.generate(do_sample=False)`.

For each prompt the reference is transformers' greedy generate (explicit
all-ones attention mask, the model's own EOS ids), run once; then greedy
Jacobi decoding at each block size n must give the same tokens. In exact
arithmetic it always does. In float32 on CPU it does in practice; in
bf16/fp16 a forward of n tokens and n forwards of one token can round
differently, a near-tie can flip an argmax, and the two outputs part ways
from that position on. `first_divergence` records where (None: identical).

Usage (fp32 acceptance: >= 20 prompts, n in 4/16/64, 128 tokens):

    model, tok = jacobi_min.load("qwen2.5-coder-0.5b-instruct")
    report = exactness(model, tok, realtasks.prompts(tok, 10, 10), [4, 16, 64], 128)
    report["blocks"][16]["exact"], report["blocks"][16]["total"]

Load with `dtype=torch.bfloat16` to measure bf16 divergence the same way
(the reference generate then runs in bf16 too).
"""
import time

import torch

from .jacobi import jacobi_decode
from .realtasks import chat_ids


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first position where a and b differ (a prefix differs at its end), or None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@torch.inference_mode()
def reference(model, ids: list[int], max_new_tokens: int) -> list[int]:
    """Greedy generate's new tokens, with an explicit all-ones mask (see DESIGN.md §1)."""
    x = torch.tensor([ids], device=model.device)
    out = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=max_new_tokens)
    return out[0, len(ids):].tolist()


def exactness(model, tokenizer, prompts, block_sizes, max_new_tokens: int, seed: int = 0) -> dict:
    """{"blocks": {n: row}, "reference_seconds": generate's time per prompt}, where row holds
    "exact" (count of prompts with identical output), "total", and per prompt "first_divergence",
    "tpf" and "seconds" (Jacobi decoding time, prefill included).

    `prompts` are token-id lists, or strings sent as the user's message in the chat template.
    """
    prompts = [chat_ids(tokenizer, p) if isinstance(p, str) else list(p) for p in prompts]
    blocks = {n: {"exact": 0, "total": len(prompts), "first_divergence": [], "tpf": [], "seconds": []}
              for n in block_sizes}
    report = {"blocks": blocks, "reference_seconds": []}
    for ids in prompts:
        start = time.perf_counter()
        expected = reference(model, ids, max_new_tokens)
        report["reference_seconds"].append(time.perf_counter() - start)
        for n in block_sizes:
            start = time.perf_counter()
            result = jacobi_decode(model, ids, block_size=n, max_new_tokens=max_new_tokens, seed=seed)
            row = blocks[n]
            row["seconds"].append(time.perf_counter() - start)
            row["first_divergence"].append(first_divergence(result.tokens, expected))
            row["exact"] += result.tokens == expected
            row["tpf"].append(result.tpf)
    return report
