"""Jacobi trajectories: every state a block passes through on its way to the fixed point.

For each prompt, greedy Jacobi decoding at block size n records, per block,
the true initial draft, the state after every iteration and the fixed point y*.
A block's context is the prompt plus all earlier fixed points, so a trajectory
stores only the prompt and each block's states.

Noise level of a state s of a block with fixed point y* (length n):

    noise(s) = (n - first_mismatch(s, y*)) / n

every position from the first wrong token on counts as noisy. The noise
schedule asks block j for the target level t_j and picks the state closest to
it (ties: the earliest state).

On disk: JSON lines, one prompt a line:
``{"prompt": [ids], "blocks": [[state_0, state_1, ..., fixed_point], ...]}``.
"""
import json
import random
from functools import partial
from pathlib import Path

import numpy as np

from .batch import batch_jacobi_decode
from .utils import as_int, atomic_write, pmap


def _trajectories(model, block_size: int, max_new_tokens: int, seed: int, batch: int,
                  item: tuple[int, list[list[int]]]) -> list[dict]:
    """The trajectories of one chunk of prompts, the first of them prompt number `start`."""
    start, prompts = item
    results, _ = batch_jacobi_decode(model, prompts, block_size, max_new_tokens, seed=seed + start, record=True,
                                     batch=batch)
    return [{"prompt": p, "blocks": [b.states for b in r.blocks]} for p, r in zip(prompts, results)]


def collect(model, prompts: list[list[int]], block_size: int, max_new_tokens: int,
            seed: int = 0, desc: str = "trajectories", workers: int = 1, batch: int = 1) -> list[dict]:
    """Decode every prompt with greedy Jacobi at `block_size`, recording all block states.

    Each of `workers` CPU processes (on a GPU, one) decodes `batch` prompts at a time (batch.py),
    taking chunks of 8 · batch prompts in turn. Prompt i's initial drafts are seeded with seed + i,
    so the result is the same for any number of workers and any batch size, up to float rounding:
    a batch computes other matrix shapes, so an argmax at a near-tie can flip (seen once in 1,000
    prompts at B = 32, at a draft position one float32 ulp from a tie; the fixed points were
    identical: experiments/batched-decoding).
    """
    batch = as_int(batch, "batch", 1)
    workers = workers if model.device.type == "cpu" else 1
    chunks = [(i, prompts[i:i + 8 * batch]) for i in range(0, len(prompts), 8 * batch)]
    job = partial(_trajectories, model, block_size, max_new_tokens, seed, batch)
    return [t for chunk in pmap(job, chunks, workers, f"{desc} (chunks of {8 * batch})") for t in chunk]


def save(path: Path, trajectories: list[dict]) -> None:
    """JSON lines, written to a temporary file and renamed: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, "".join(json.dumps(t) + "\n" for t in trajectories))


def load(path: Path) -> list[dict]:
    """The trajectories of a JSON-lines file; a malformed line is a ValueError naming the file and the line."""
    out = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {number}: not a JSON trajectory ({err.msg} at column {err.colno})") from err
        if not isinstance(record, dict) or not {"prompt", "blocks"} <= record.keys():
            raise ValueError(f"{path}, line {number}: a trajectory needs 'prompt' and 'blocks'")
        out.append(record)
    return out


def first_mismatch(state: list[int], fixed_point: list[int]) -> int:
    """Index of the first position where `state` differs from `fixed_point` (n when none)."""
    for i, (a, b) in enumerate(zip(state, fixed_point)):
        if a != b:
            return i
    return len(fixed_point)


def noise_level(state: list[int], fixed_point: list[int]) -> float:
    """(n - first_mismatch) / n: 0 for the fixed point, close to 1 for a random draft."""
    return (len(fixed_point) - first_mismatch(state, fixed_point)) / len(fixed_point)


SCHEDULES = ("progressive", "random", "reverse")


def schedule(num_blocks: int, window: int, kind: str, rng: random.Random, offset: int = 0) -> list[float]:
    """Target noise t_j of every block; W = linspace(0, 1, w).

    progressive: t_j = W[(j + offset) mod w]; reverse: the same over W reversed;
    random: t_j drawn uniformly from W.
    """
    levels = np.linspace(0.0, 1.0, window).tolist()
    if kind == "progressive":
        return [levels[(j + offset) % window] for j in range(num_blocks)]
    if kind == "reverse":
        return [levels[::-1][(j + offset) % window] for j in range(num_blocks)]
    if kind == "random":
        return [rng.choice(levels) for _ in range(num_blocks)]
    raise ValueError(f"unknown schedule {kind!r}: choose one of {SCHEDULES}")


def pick_state(states: list[list[int]], target: float) -> list[int]:
    """The state whose noise level is closest to `target`; ties go to the earliest."""
    fixed_point = states[-1]
    gaps = [abs(noise_level(s, fixed_point) - target) for s in states]
    return states[gaps.index(min(gaps))]
