"""Small helpers the method shares: input checks, EOS ids, an atomic write, the learning-rate
schedule, training snapshots, and independent jobs in forked CPU processes.

A tiny model's forward is too small to keep two cores busy with intra-op threads, so
collection runs one job per process instead (`pmap`). The job is a function given to `pmap`
(a `functools.partial` holding the models, trajectories or configs it needs), which the forked
processes inherit instead of unpickling it; results come back in input order, so the output does
not depend on the number of workers.
"""
import math
import multiprocessing as mp
import numbers
import traceback
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm


def is_int(value) -> bool:
    """A Python or numpy integer, not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def as_int(value, name: str, low: int) -> int:
    """An integer argument >= low, or a ValueError naming it."""
    if not is_int(value) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def as_token_list(input_ids) -> list[int]:
    """One prompt as a list of ints: a list of ints, a 1-D / (1, L) tensor or numpy array, or a
    tokenizer's output (its `input_ids`)."""
    if isinstance(input_ids, Mapping) and "input_ids" in input_ids:  # BatchEncoding
        input_ids = input_ids["input_ids"]
    if isinstance(input_ids, np.ndarray):
        input_ids = torch.from_numpy(input_ids)
    if isinstance(input_ids, torch.Tensor):
        if input_ids.is_meta:
            raise ValueError("input_ids is a meta-device tensor: it holds no token ids")
        if input_ids.dim() == 2 and input_ids.shape[0] != 1:
            raise ValueError(f"batch size {input_ids.shape[0]} is not supported: pass one prompt, shape (L,) or (1, L)")
        if input_ids.dim() not in (1, 2):
            raise ValueError(f"input_ids must have shape (L,) or (1, L), got {tuple(input_ids.shape)}")
        input_ids = input_ids.reshape(-1).tolist()
    if not isinstance(input_ids, (list, tuple)):
        raise ValueError(f"input_ids must be one prompt's token ids (a list of ints or a (1, L) tensor), "
                         f"got {type(input_ids).__name__}")
    ids = list(input_ids[0]) if len(input_ids) == 1 and isinstance(input_ids[0], (list, tuple)) else list(input_ids)
    if ids and isinstance(ids[0], (list, tuple)):
        raise ValueError(f"batch size {len(ids)} is not supported: decode one prompt at a time")
    if not all(is_int(t) for t in ids):
        raise ValueError("input_ids must be token ids (ints, not floats or bools)")
    return [int(t) for t in ids]


def check_inputs(model, input_ids, max_new_tokens: int, block_size: int = 1) -> list[int]:
    """The prompt as a list of ints, or a ValueError that says what is wrong."""
    ids = as_token_list(input_ids)
    if not ids:
        raise ValueError("the prompt is empty: give at least one token")
    vocab = model.config.vocab_size
    if min(ids) < 0 or max(ids) >= vocab:
        raise ValueError(f"token ids must lie in [0, {vocab}), got min {min(ids)} and max {max(ids)}")
    as_int(block_size, "block_size", 1)
    as_int(max_new_tokens, "max_new_tokens", 0)
    context = model.config.max_position_embeddings
    if len(ids) + max_new_tokens > context:
        raise ValueError(f"prompt ({len(ids)} tokens) + max_new_tokens ({max_new_tokens}) exceeds "
                         f"the model's context of {context} tokens")
    return ids


def eos_ids(model, eos_token_id=None) -> set[int]:
    """EOS ids as a set: the argument (an int, a list / tuple of ints, or a 0-D / 1-D tensor), else
    the model's generation config's."""
    value = model.generation_config.eos_token_id if eos_token_id is None else eos_token_id
    if value is None:
        return set()
    if isinstance(value, torch.Tensor) and value.dim() <= 1:
        value = value.reshape(-1).tolist()
    if is_int(value):
        value = [value]
    vocab = model.config.vocab_size
    if not isinstance(value, (list, tuple, set)) or not all(is_int(v) and 0 <= v < vocab for v in value):
        raise ValueError(f"eos_token_id must be a token id in [0, {vocab}), a list of them or a 0-D / 1-D tensor, "
                         f"got {eos_token_id!r}")
    return {int(v) for v in value}


def atomic_write(path: Path, data) -> None:
    """Write `data` (text, or a function that writes a file at the path it is given) to a
    temporary name beside `path`, then rename it over `path`: a crash leaves the old file or
    the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(data) if isinstance(data, str) else data(tmp)
    tmp.replace(path)


def lr_at(step: int, total: int, warmup: int, peak: float) -> float:
    """Linear warm-up to `peak`, then cosine decay to 0."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def snapshot(path: Path, model, opt, log: list[dict], **state) -> None:
    """Everything a resumed run needs (weights, optimiser, log and the random `state`), written
    atomically: a temporary file, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "log": log,
                                               **state}, tmp))


def restore(path: Path, model, opt) -> dict:
    """Load a snapshot into model and optimiser; returns it (its log and random state)."""
    state = torch.load(path, weights_only=False)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    return state


def pmap(fn, items: list, workers: int = 1, desc: str | None = None) -> list:
    """[fn(x) for x in items], in `workers` forked processes of one thread each when workers > 1.

    The processes are forked with `fn` and `items`, so nothing of them is pickled: each takes the next
    index from a queue when it is free (list the longest jobs first to balance them) and sends back
    each result. A job that fails raises its error here, caused by its traceback in the process."""
    if workers <= 1:
        return [fn(x) for x in tqdm(items, desc=desc)]
    context = mp.get_context("fork")
    todo, done = context.SimpleQueue(), context.SimpleQueue()
    for i in [*range(len(items)), *[None] * workers]:  # a None tells a process to stop
        todo.put(i)
    processes = [context.Process(target=serve, args=(fn, items, todo, done)) for _ in range(workers)]
    for process in processes:
        process.start()
    outcomes = {i: (result, error) for i, result, error in (done.get() for _ in tqdm(items, desc=desc))}
    for process in processes:
        process.join()
    for _, error in outcomes.values():
        if error is not None:
            raise error[0] from RuntimeError(f"in a pmap process:\n{error[1]}")
    return [outcomes[i][0] for i in range(len(items))]


def serve(fn, items: list, todo, done) -> None:
    """A `pmap` process: fn(items[i]) on one thread for each index it takes from `todo` until a None;
    sends back (i, result, None), or (i, None, (the error, its traceback)) when the job raised."""
    torch.set_num_threads(1)
    for i in iter(todo.get, None):
        try:
            done.put((i, fn(items[i]), None))
        except Exception as err:  # handed to the caller, which raises it
            done.put((i, None, (err, traceback.format_exc())))


@contextmanager
def num_threads(n: int):
    """Run the block on `n` torch threads, then hand back the count the caller had."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
