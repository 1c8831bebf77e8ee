"""Independent jobs in forked CPU processes of one thread each.

A tiny model's forward is too small to keep two cores busy with intra-op
threads, so collection and the ablation run one job per process instead.
Jobs read what they share (models, trajectories, configs) from `SHARED`,
which forked processes inherit instead of unpickling it; results come back
in input order, so the output does not depend on the number of workers.
"""
import multiprocessing as mp

import torch
from tqdm import tqdm

SHARED = {}


def pmap(fn, items: list, workers: int = 1, desc: str | None = None, chunksize: int = 1) -> list:
    """[fn(x) for x in items], in `workers` processes when workers > 1."""
    if workers <= 1:
        return [fn(x) for x in tqdm(items, desc=desc)]
    with mp.get_context("fork").Pool(workers, initializer=torch.set_num_threads, initargs=(1,)) as pool:
        return list(tqdm(pool.imap(fn, items, chunksize=chunksize), total=len(items), desc=desc))
