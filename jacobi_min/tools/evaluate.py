"""Scoring a model on held-out problems: accuracy, tokens per forward of greedy Jacobi, repetition.

The embedded models answer the task's `Question: … Answer:` prompts (`task`); a chat model
(the real Qwen) gets the question as a user message with the GSM8K instruction and is scored
on its final boxed number (`realtasks`).
"""
from dataclasses import dataclass
from functools import partial

import torch
from tqdm import tqdm

from ..jacobi import jacobi_decode
from ..train import TrainConfig, in_mode, option, train
from . import realtasks, task


def repetition(tokens: list[int]) -> float:
    """Share of tokens equal to the one before: ~0 for healthy text, → 1 in a collapse."""
    return sum(a == b for a, b in zip(tokens, tokens[1:])) / max(1, len(tokens) - 1)


def prompt_ids(tokenizer, problem: task.Problem) -> list[int]:
    """The embedded models' `Question: … Answer:` prompt; for a chat model (a tokenizer with a chat
    template), the question as the user's message with the GSM8K instruction (boxed answer)."""
    if tokenizer.chat_template:
        return realtasks.chat_ids(tokenizer, f"{problem.question}\n{realtasks.GSM8K_INSTRUCTION}")
    return tokenizer(problem.prompt)["input_ids"]


def is_correct(tokenizer, tokens: list[int], problem: task.Problem) -> bool:
    """`#### answer` for the embedded models; a chat model's final (boxed) number."""
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    if tokenizer.chat_template:
        return realtasks.gsm8k_correct(text, f"#### {problem.answer}")
    return task.is_correct(text, problem.answer)


@torch.no_grad()
def evaluate(model, tokenizer, problems: list[task.Problem], block_size: int,
             max_new_tokens: int = task.MAX_ANSWER_TOKENS, progress: bool = True) -> dict:
    """Held-out accuracy, TPF of greedy Jacobi at `block_size`, and repetition. The model decodes in
    eval mode and comes back in the mode it came in (the drafts' seeded generator leaves torch's
    global RNG alone)."""
    correct, tokens, forwards, rep = [], 0, 0, 0.0
    with in_mode(model, training=False):
        for p in tqdm(problems, desc="evaluate", leave=False, disable=not progress):
            result = jacobi_decode(model, prompt_ids(tokenizer, p), block_size, max_new_tokens)
            correct.append(is_correct(tokenizer, result.tokens, p))
            tokens, forwards = tokens + sum(result.accepted), forwards + result.forwards
            rep += repetition(result.tokens)
    n = len(problems)
    return {"accuracy": sum(correct) / n, "tpf": tokens / forwards, "repetition": rep / n,
            "correct": bucket_counts(problems, correct)}


def bucket_counts(problems: list[task.Problem], correct: list[bool]) -> dict[str, list[int]]:
    """{bucket: [correct, problems]} over the length buckets the problems fall in."""
    counts = {}
    for p, ok in zip(problems, correct):
        tally = counts.setdefault(task.bucket_of(task.answer_length(p)), [0, 0])
        tally[0], tally[1] = tally[0] + ok, tally[1] + 1
    return counts


@dataclass
class HeldOutCheck:
    """The training loop's held-out check: greedy Jacobi at n = `block_size` on `problems` problems
    of the task's test split (seed 1), at steps 0, 50, 100, every `every` steps and the last."""
    every: int = option(200, "steps between held-out checks (and at steps 0, 50, 100, the last)", flag="--eval-every")
    problems: int = option(40, "held-out problems of each check (0: no checks)", flag="--eval-problems")
    block_size: int = option(16, "n of the checks' greedy Jacobi decoding", flag="--eval-block-size")


def train_and_check(model, tokenizer, trajectories: list[dict], cfg: TrainConfig, out_dir=None,
                    check: HeldOutCheck = HeldOutCheck(), **options) -> list[dict]:
    """`train` with the held-out `check` (by default 40 problems, every 200 steps); none without problems."""
    held_out = task.problems("test", check.problems, seed=1)
    scores = partial(evaluate, tokenizer=tokenizer, problems=held_out, block_size=check.block_size) if held_out else None
    return train(model, tokenizer, trajectories, cfg, out_dir, check=scores, check_every=check.every, **options)
