"""Progressive Jacobi Forcing on the embedded model, with its baselines, in one command.

    round 1: trajectories of the base model at n = 16  ->  train from the base model
    round 2: trajectories of the round-1 model at n = 32  ->  continue training
    CLLM-style baseline: the round-1 trajectories, the same steps, lr and λ in two phases
    ablation: round 1 alone, shorter, once per noise schedule

Tiny-model settings (accuracy on 2000 held-out problems, where the base
model scores 99.45%; TPF at n = 16): round 1 with 1600 steps reaches 97.95%
and 3.56 where 800 reach 97.4% and 2.85 (8000 prompts instead of 4000 add
nothing: 97.65%, 3.52); round 2 at λ = 40 keeps 97.5% at 3.64 where λ = 20
keeps 97.05% at 3.70.

Everything is seeded; checkpoints land in `jacobi_min/checkpoints/`, the
ablation's result in `figures/results/ablation.json`.
"""
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from . import task, trajectories
from .model import CHECKPOINTS, load
from .train import TrainConfig, evaluate, prompt_ids, save_checkpoint, train

RESULTS = Path(__file__).parent.parent / "figures" / "results"


@dataclass
class PipelineConfig:
    train_prompts: int = 4000
    max_new_tokens: int = 96
    round1_block: int = 16
    round2_block: int = 32
    round1: TrainConfig = field(default_factory=lambda: TrainConfig(steps=1600, lr=5e-4))
    round2: TrainConfig = field(default_factory=lambda: TrainConfig(steps=400, lr=2e-4, lam=40.0))
    ablation_steps: int = 300
    ablation_problems: int = 100
    seed: int = 0
    base: str = "base"  # the model to start from: an embedded name, a directory, an alias or a hub id
    device: str = "cpu"
    out: Path = CHECKPOINTS  # checkpoints land in out/jacobi-forcing and out/cllm
    results: Path = RESULTS  # the ablation lands in results/ablation.json


def prompts(tokenizer, count: int, seed: int) -> list[list[int]]:
    return [prompt_ids(tokenizer, p) for p in task.problems("train", count, seed=seed)]


def collect(model, tokenizer, cfg: PipelineConfig, block_size: int, desc: str) -> list[dict]:
    ids = prompts(tokenizer, cfg.train_prompts, cfg.seed)
    return trajectories.collect(model, ids, block_size, cfg.max_new_tokens, seed=cfg.seed, desc=desc)


def join_logs(log1: list[dict], log2: list[dict]) -> list[dict]:
    """One log over both rounds: round 2's steps continue round 1's."""
    return log1 + [{**row, "step": row["step"] + len(log1), "round": 2} for row in log2]


def jacobi_forcing(cfg: PipelineConfig, work: Path) -> dict:
    """Round 1 then round 2; returns wall times of each stage."""
    times, start = {}, time.time()
    model, tokenizer = load(cfg.base, cfg.device)
    traj1 = collect(model, tokenizer, cfg, cfg.round1_block, "trajectories n=16 (base)")
    trajectories.save(work / "round1.jsonl", traj1)
    times["collect_round1"] = time.time() - start
    log1 = train(model, tokenizer, traj1, cfg.round1)
    times["train_round1"] = time.time() - start - sum(times.values())
    traj2 = collect(model, tokenizer, cfg, cfg.round2_block, "trajectories n=32 (round 1)")
    trajectories.save(work / "round2.jsonl", traj2)
    times["collect_round2"] = time.time() - start - sum(times.values())
    log2 = train(model, tokenizer, traj2, cfg.round2)
    times["train_round2"] = time.time() - start - sum(times.values())
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("out", "results")}
    save_checkpoint(model, tokenizer, cfg.out / "jacobi-forcing", cfg.round2, join_logs(log1, log2),
                    extra={"pipeline": settings, "seconds": {k: round(v) for k, v in times.items()}})
    return times


def cllm(cfg: PipelineConfig, work: Path) -> float:
    """The CLLM-style baseline on the round-1 trajectories (CLLM has no progressive rounds), under
    Jacobi Forcing's optimiser schedule: round 1's steps, lr and λ, then round 2's. The two models
    then differ only in what the paper changes: packing, noise schedule, mask and re-collection."""
    start = time.time()
    model, tokenizer = load(cfg.base, cfg.device)
    traj = trajectories.load(work / "round1.jsonl")
    phase1 = replace(cfg.round1, method="cllm")
    phase2 = replace(cfg.round2, method="cllm", seed=cfg.round2.seed + 1)  # else it redraws phase 1's batches
    log1 = train(model, tokenizer, traj, phase1)
    log2 = train(model, tokenizer, traj, phase2)
    save_checkpoint(model, tokenizer, cfg.out / "cllm", phase2, join_logs(log1, log2),
                    extra={"phase1": asdict(phase1), "seconds": round(time.time() - start)})
    return time.time() - start


def ablation(cfg: PipelineConfig, work: Path) -> dict:
    """Iterations per token (1 / TPF at n = 16) after a short round 1 with each noise schedule."""
    traj = trajectories.load(work / "round1.jsonl")
    held_out = task.problems("test", cfg.ablation_problems, seed=2)
    result = {}
    for kind in trajectories.SCHEDULES:
        model, tokenizer = load(cfg.base, cfg.device)
        config = replace(cfg.round1, schedule=kind, steps=cfg.ablation_steps, eval_every=cfg.ablation_steps + 1)
        train(model, tokenizer, traj, config)
        scores = evaluate(model, tokenizer, held_out, cfg.round1_block)
        result[kind] = {"iterations_per_token": 1 / scores["tpf"], **scores}
    cfg.results.mkdir(parents=True, exist_ok=True)
    (cfg.results / "ablation.json").write_text(json.dumps({"steps": cfg.ablation_steps, "block_size": cfg.round1_block,
                                                           "problems": cfg.ablation_problems, "schedules": result}, indent=2))
    return result


STAGES = ("all", "jacobi-forcing", "baselines")


def run(cfg: PipelineConfig = PipelineConfig(), work: Path = Path("runs"), stage: str = "all") -> dict:
    """The pipeline (or one stage: baselines need round 1's trajectories); wall time of each step in seconds."""
    times = jacobi_forcing(cfg, work) if stage in ("all", "jacobi-forcing") else {}
    if stage in ("all", "baselines"):
        times["cllm"] = cllm(cfg, work)
        start = time.time()
        ablation(cfg, work)
        times["ablation"] = time.time() - start
    return {k: round(v) for k, v in times.items()}
