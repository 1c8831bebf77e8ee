"""Progressive Jacobi Forcing on the embedded model, with its baselines, in one command.

    round 1: trajectories of the base model at n = 16  ->  train from the base model
    round 2: trajectories of the round-1 model at n = 32  ->  continue training
    round 3: trajectories of the round-2 model at n = 32, right answers only  ->  two training
             seeds side by side, their weights averaged, then two 50-step continuations of
             the average (`POLISHES`), averaged again:
                 θ̄ = ½(θ_seed0 + θ_seed1),   θ = ½(θ_ar(θ̄) + θ_long(θ̄))
    CLLM baseline: CLLM's trainer (`train.CLLM`) on the round-1 trajectories, the same
              steps and λ in two phases, both at round 1's lr
    ablation: round 1 alone, shorter, once per variant (noise schedule, schedule offset, λ)
              and training seed, scored on the long bucket

The recipe of rounds 1 and 2 (λ = 10, AdamW ε = 1e-4, random schedule offset,
4,000 prompts; lr 5e-4 in round 1, 3e-4 in round 2) is the one the controls
and the round-2 arms chose on the embedded base (docs/results.md,
"Choosing the recipe" and "The shipped models on the scoreboard").
Decision: the official trainer runs one epoch at lr 1e-6 on a 7B model; a
tiny model trained from scratch at lr 2e-3 needs lr 5e-4 for 1,600 steps
(about three passes over the 4,000 trajectories) to lift TPF, and AdamW's
ε = 1e-4 (not 1e-8) is what keeps that from costing answers. Round 2 at lr
5e-4 cost 4 points of short answers, at 2e-4 it gave back TPF on long
answers; 3e-4 keeps every bucket within 1 point of the base. λ = 10 is
the official AR weight.

Decision: the official recipe has neither a third round nor weight
averaging; ours adds both, measured in docs/results.md ("A third round from
the round-2 model"). Round 3 trains without the official 1/T on each
example's consistency loss (`undivided_consistency`) at λ = 30 and lr 3e-4:
long answers' TPF 2.30 → 3.2, at a cost of 0–7 answers of 300 per bucket
that the seed decides. Averaging two seeds' weights keeps their speed; from
that average, 50 AR-only steps buy the short answers back and 50 steps
that keep long answers' consistency keep their speed; the average of those
two beat round 2 on every bucket, on 300 and on 1,200 held-out problems
each (297 / 298 / 299 of 300 right at 2.58 / 3.42 / 3.01 TPF against 294 /
298 / 298 at 2.45 / 3.03 / 2.30). Only right answers are trained on in round
3 (a trajectory's targets are the model's own answer).

The training prompts mix the three length buckets (`task.BUCKETS`) equally.
Trajectory collection runs in `workers` CPU processes; everything is seeded,
so the result does not depend on their number. Checkpoints land in `out`
(default `runs/checkpoints`; `jacobi_min/checkpoints` rebuilds the shipped
Jacobi Forcing and CLLM recipes), the ablation's result in `results/ablation.json`.
CLLM trains at its own λ, `cllm_lam` = 30: where its frontier meets Jacobi
Forcing's accuracy (docs/results.md).

`pipeline` (stage `models`) builds both checkpoints, Jacobi Forcing's rounds
beside CLLM's phases (round 3's runs two by two, once CLLM is done);
`--stage all` adds the ablation, a study that does not feed the checkpoints.

Commands: `pipeline`, and `collect` (one round's trajectories of any model).
"""
import copy
import hashlib
import json
import multiprocessing as mp
import time
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import torch

from . import task, trajectories
from .cli import at_least, device_args, model_args, with_model
from .model import load
from .train import CLLM, TrainConfig, evaluate, is_correct, prompt_ids, save_checkpoint, train
from .workers import SHARED, pmap

RESULTS = Path(__file__).parent.parent / "figures" / "results"
ABLATION = {  # variant -> TrainConfig changes from round 1 (λ = 10, random offset)
    "progressive": {}, "random": {"schedule": "random"}, "reverse": {"schedule": "reverse"},
    "progressive, offset 0": {"random_offset": False},
    "λ = 3": {"lam": 3.0}, "λ = 30": {"lam": 30.0},
}
RECIPE = {"lr": 5e-4, "lam": 10.0, "adam_eps": 1e-4, "random_offset": True}
ROUND2_LR = 3e-4
ROUND3 = {"lr": ROUND2_LR, "lam": 30.0, "undivided_consistency": True}
POLISH = {"steps": 50, "lr": 3e-5, "adam_eps": 1e-4, "ar_on_prompt": False}
POLISHES = {  # name -> the continuation of round 3's seed average: AR only, or keeping long answers' consistency
    "ar": TrainConfig(**POLISH, consistency_on=()),
    "long": TrainConfig(**POLISH, consistency_on=("long",), lam=30.0, undivided_consistency=True, random_offset=True),
}
SEEDED = ("progressive", "random", "reverse")


@dataclass
class PipelineConfig:
    train_prompts: int = 4000
    max_new_tokens: int = task.MAX_ANSWER_TOKENS
    round1_block: int = 16
    round2_block: int = 32
    round1: TrainConfig = field(default_factory=lambda: TrainConfig(steps=1600, **RECIPE))
    round2: TrainConfig = field(default_factory=lambda: TrainConfig(steps=800, **{**RECIPE, "lr": ROUND2_LR}))
    round3_block: int = 32
    round3: TrainConfig = field(default_factory=lambda: TrainConfig(steps=800, **{**RECIPE, **ROUND3}))
    round3_seeds: int = 2  # round 3 runs from seed round3.seed on, averaged
    polishes: dict = field(default_factory=lambda: dict(POLISHES))
    cllm_lam: float = 30.0  # the CLLM baseline's λ (its phases take every other setting from the rounds)
    ablation: dict = field(default_factory=lambda: dict(ABLATION))
    ablation_seeds: int = 3
    ablation_steps: int = 150
    ablation_problems: int = 40
    workers: int = 2
    seed: int = 0
    base: str = "base"  # the model to start from: an embedded name, a directory, an alias or a hub id
    device: str = "cpu"
    out: Path = Path("runs/checkpoints")  # checkpoints land in out/jacobi-forcing and out/cllm
    results: Path = RESULTS  # the ablation lands in results/ablation.json


def with_training(cfg: PipelineConfig, seed: int, lam: float | None = None) -> PipelineConfig:
    """`cfg` with every training stage seeded by `seed` (other batches and noisy states drawn from
    the same trajectories: the spread between training runs; round 3's seeds are seed, seed + 1, …)
    and, when given, Jacobi Forcing's rounds 1 and 2 and the ablation at AR weight `lam` (CLLM keeps
    `cllm_lam`, round 3 and its continuations their own)."""
    changes = {"seed": seed} if lam is None else {"seed": seed, "lam": lam}
    return replace(cfg, round1=replace(cfg.round1, **changes), round2=replace(cfg.round2, **changes),
                   round3=replace(cfg.round3, seed=seed), polishes={k: replace(p, seed=seed) for k, p in cfg.polishes.items()})


def prompts(tokenizer, count: int, seed: int) -> list[list[int]]:
    return [prompt_ids(tokenizer, p) for p in task.problems("train", count, seed=seed)]


def collect(model, tokenizer, cfg: PipelineConfig, block_size: int, desc: str) -> list[dict]:
    ids = prompts(tokenizer, cfg.train_prompts, cfg.seed)
    return trajectories.collect(model, ids, block_size, cfg.max_new_tokens, seed=cfg.seed, desc=desc,
                                workers=cfg.workers)


def join_logs(first: list[dict], *later: list[dict]) -> list[dict]:
    """One log over the rounds: each round's steps continue the one before (its step 0 is that
    round's end); rows after round 1's carry their round's number."""
    joined = list(first)
    for number, log in enumerate(later, start=2):
        joined += [{**row, "step": row["step"] + joined[-1]["step"], "round": number} for row in log]
    return joined


def right_answers(records: list[dict], problems: list[task.Problem], tokenizer) -> list[dict]:
    """The trajectories whose answer (the fixed points of their blocks) solves their problem: a
    trajectory's targets are the model's own answer, so a wrong one would be trained on as right."""
    return [r for r, p in zip(records, problems, strict=True)
            if is_correct(tokenizer, [token for states in r["blocks"] for token in states[-1]], p)]


def average(states: list[dict]) -> dict:
    """θ̄ = (1/k) Σ θ_i, weight by weight."""
    return {k: sum(s[k] for s in states) / len(states) for k in states[0]}


class Work:
    """The work folder: every finished stage's output and a `<stage>.done` file with its wall
    time, so that a rerun after an interruption resumes after the last finished stage. Files
    are written to a temporary name, then renamed: a stage is either finished or absent."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def times(self) -> dict[str, int]:
        return {p.stem: int(p.read_text()) for p in sorted(self.folder.glob("*.done"))}

    def done(self, name: str, start: float) -> None:
        atomic_write(self.folder / f"{name}.done", str(round(time.time() - start)))

    def settle(self, name: str, settings: dict) -> None:
        """Record the settings stage `name` is made with; a ValueError when the folder already holds
        that stage (finished or interrupted) made with other settings, which a rerun would reuse."""
        path = self.folder / f"{name}.settings.json"
        text = json.dumps(settings, sort_keys=True, default=str)
        if not path.exists():
            atomic_write(path, text)
        elif path.read_text() != text:
            old, new = flat(json.loads(path.read_text())), flat(json.loads(text))
            changed = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
            raise ValueError(f"{self.folder} holds stage '{name}' made with other settings ({', '.join(changed)} differ): "
                             "give this run another --work folder")

    def trajectories(self, name: str, make) -> list[dict]:
        """The trajectories `make()` returns, from `name`.jsonl when an earlier run finished them."""
        path = self.folder / f"{name}.jsonl"
        if not (self.folder / f"{name}.done").exists():
            start = time.time()
            trajectories.save(path, make())
            self.done(name, start)
        return trajectories.load(path)

    def result(self, name: str, make) -> dict:
        """The JSON result `make()` returns, from `name`.json when an earlier run finished it."""
        path = self.folder / f"{name}.json"
        if not (self.folder / f"{name}.done").exists():
            start = time.time()
            atomic_write(path, json.dumps(make()))
            self.done(name, start)
        return json.loads(path.read_text())

    def training(self, name: str, model, make) -> list[dict]:
        """Train `model` with `make(resume)` (which returns the log, keeping snapshots in `resume` so
        that an interrupted stage continues where it stopped), or load the float32 weights and log
        an earlier run saved under `name`."""
        path = self.folder / f"{name}.pt"
        if (self.folder / f"{name}.done").exists():
            state = torch.load(path)
            model.load_state_dict(state["model"])
            return state["log"]
        start = time.time()
        log = make(self.folder / f"{name}.resume.pt")
        torch.save({"model": model.state_dict(), "log": log}, path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
        self.done(name, start)
        return log


def flat(settings: dict, prefix: str = "") -> dict:
    """{"round1": {"seed": 0}} as {"round1.seed": 0}."""
    out = {}
    for key, value in settings.items():
        out.update(flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


def atomic_write(path: Path, text: str) -> None:
    path.with_suffix(".tmp").write_text(text)
    path.with_suffix(".tmp").replace(path)


def round1_trajectories(cfg: PipelineConfig, work: Work) -> list[dict]:
    work.settle("round1", {"base": cfg.base, "prompts": cfg.train_prompts, "seed": cfg.seed,
                           "block": cfg.round1_block, "max_new_tokens": cfg.max_new_tokens})
    model, tokenizer = load(cfg.base, cfg.device)
    return work.trajectories("round1", lambda: collect(model, tokenizer, cfg, cfg.round1_block, "trajectories n=16 (base)"))


def jacobi_forcing(cfg: PipelineConfig, work: Work) -> None:
    """Rounds 1, 2 and 3; the checkpoint records the settings and each stage's wall time."""
    traj1 = round1_trajectories(cfg, work)
    model, tokenizer = load(cfg.base, cfg.device)
    round1, round2 = asdict(cfg.round1), asdict(cfg.round2)
    work.settle("train_round1", {"round1": round1})
    work.settle("round2", {"round1": round1, "block": cfg.round2_block})
    work.settle("train_round2", {"round1": round1, "round2": round2})
    log1 = work.training("train_round1", model, lambda resume: train(model, tokenizer, traj1, cfg.round1, resume=resume))
    traj2 = work.trajectories("round2", lambda: collect(model, tokenizer, cfg, cfg.round2_block, "trajectories n=32 (round 1)"))
    log2 = work.training("train_round2", model, lambda resume: train(model, tokenizer, traj2, cfg.round2, resume=resume))
    log3 = round3(model, tokenizer, cfg, work, {"round1": round1, "round2": round2})
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("out", "results")}
    seconds = {k: v for k, v in work.times.items() if not k.startswith(("cllm", "ablation"))}
    save_checkpoint(model, tokenizer, cfg.out / "jacobi-forcing", cfg.round3, join_logs(log1, log2, log3),
                    extra={"pipeline": settings, "seconds": seconds, "log": "round 3: its first seed's run"})


def round3(model, tokenizer, cfg: PipelineConfig, work: Work, before: dict) -> list[dict]:
    """Round 3 from `model` (round 2's), left in `model`: its right answers at n = 32, then the
    seeds' average and the average of its continuations (see the module's docstring). Returns
    the first seed's log."""
    problems = task.problems("train", cfg.train_prompts, seed=cfg.seed)
    work.settle("round3", {**before, "block": cfg.round3_block})
    traj = work.trajectories("round3", lambda: right_answers(
        collect(model, tokenizer, cfg, cfg.round3_block, "trajectories n=32 (round 2)"), problems, tokenizer))
    if not traj:
        raise ValueError(f"round 3: none of round 2's {len(problems)} answers is right; there is nothing to train on")
    seeds = {f"train_round3_s{i}": replace(cfg.round3, seed=cfg.round3.seed + i) for i in range(cfg.round3_seeds)}
    logs = averaged_runs(model, tokenizer, traj, seeds, cfg, work, before)
    settled = {**before, "round3": [asdict(c) for c in seeds.values()]}
    averaged_runs(model, tokenizer, traj, {f"polish_{k}": p for k, p in cfg.polishes.items()}, cfg, work, settled)
    return logs[0]


def averaged_runs(model, tokenizer, traj: list[dict], runs: dict[str, TrainConfig], cfg: PipelineConfig,
                  work: Work, before: dict) -> list[dict]:
    """Train a copy of `model` under each config (side by side, one process each, on CPU with
    workers > 1), then leave the average of their weights in `model`; returns their logs."""
    start = copy.deepcopy(model.state_dict())

    def run(name: str, config: TrainConfig) -> list[dict]:  # trains, or reads back a finished run
        model.load_state_dict(start)
        work.settle(name, {**before, name: asdict(config)})
        return work.training(name, model, lambda resume: train(model, tokenizer, traj, config, resume=resume))

    if cfg.workers > 1 and cfg.device == "cpu":
        in_parallel([partial(run, name, config) for name, config in runs.items()])
    logs, states = [], []
    for name, config in runs.items():
        logs.append(run(name, config))
        states.append(copy.deepcopy(model.state_dict()))
    model.load_state_dict(average(states))
    return logs


def cllm(cfg: PipelineConfig, work: Work) -> None:
    """The CLLM baseline on the round-1 trajectories (CLLM has no progressive rounds): CLLM's
    trainer and label smoothing under Jacobi Forcing's optimiser schedule at λ = `cllm_lam`,
    round 1's steps, then round 2's, both phases at round 1's lr (round 2's lower lr is for Jacobi Forcing's
    re-collected trajectories). The two models then differ only in what the paper changes:
    examples per prompt, packing, noise schedule, mask and re-collection."""
    traj = round1_trajectories(cfg, work)
    model, tokenizer = load(cfg.base, cfg.device)
    cllm_settings = {**CLLM, "lam": cfg.cllm_lam}
    phase1 = replace(cfg.round1, **cllm_settings)
    phase2 = replace(cfg.round2, **cllm_settings, lr=cfg.round1.lr, seed=cfg.round2.seed + 1)  # seed: else phase 1's batches
    work.settle("cllm_phase1", {"phase1": asdict(phase1)})
    work.settle("cllm_phase2", {"phase1": asdict(phase1), "phase2": asdict(phase2)})
    log1 = work.training("cllm_phase1", model, lambda resume: train(model, tokenizer, traj, phase1, resume=resume))
    log2 = work.training("cllm_phase2", model, lambda resume: train(model, tokenizer, traj, phase2, resume=resume))
    save_checkpoint(model, tokenizer, cfg.out / "cllm", phase2, join_logs(log1, log2),
                    extra={"phase1": asdict(phase1), "seconds": work.times["cllm_phase1"] + work.times["cllm_phase2"]})


def ablation_run(job: tuple[str, int]) -> dict:
    """One short round 1 from the base model with one variant and seed, scored on long answers;
    kept in the work folder under a hash of its settings, so a rerun skips it."""
    name, seed = job
    cfg, folder, traj, held_out = SHARED["ablation"]
    config = replace(cfg.round1, **cfg.ablation[name], seed=seed, steps=cfg.ablation_steps,
                     eval_every=cfg.ablation_steps + 1)
    key = hashlib.sha256(json.dumps([asdict(config), cfg.base, cfg.ablation_problems]).encode()).hexdigest()[:12]
    path = folder / f"ablation-{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    model, tokenizer = load(cfg.base, cfg.device)
    train(model, tokenizer, traj, config, progress=False)
    scores = evaluate(model, tokenizer, held_out, cfg.round1_block, cfg.max_new_tokens, progress=False)
    result = {"seed": seed, "iterations_per_token": 1 / scores["tpf"], **scores}
    atomic_write(path, json.dumps(result))
    return result


def ablation(cfg: PipelineConfig, work: Work) -> dict:
    """Iterations per token (1 / TPF at n = 16) and accuracy on held-out long answers after a
    short round 1 with each variant; the noise schedules once per seed."""
    start = time.time()
    held_out = task.problems("test", cfg.ablation_problems, seed=2, length="long")
    SHARED["ablation"] = (cfg, work.folder, round1_trajectories(cfg, work), held_out)
    jobs = [(name, seed) for name in cfg.ablation for seed in range(cfg.ablation_seeds if name in SEEDED else 1)]
    scores = pmap(ablation_run, jobs, cfg.workers if cfg.device == "cpu" else 1, "ablation")
    result = {name: [s for (n, _), s in zip(jobs, scores) if n == name] for name in cfg.ablation}
    cfg.results.mkdir(parents=True, exist_ok=True)
    (cfg.results / "ablation.json").write_text(json.dumps(
        {"steps": cfg.ablation_steps, "block_size": cfg.round1_block, "problems": cfg.ablation_problems,
         "length": "long", "variants": cfg.ablation, "runs": result}, indent=2))
    work.done("ablation", start)
    return result


def in_parallel(jobs: list) -> None:
    """Run each job() in a process of its own (one thread each), and wait for all of them."""
    processes = [mp.get_context("fork").Process(target=one_thread, args=(job,)) for job in jobs]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
    if any(p.exitcode != 0 for p in processes):
        raise RuntimeError("a pipeline stage failed (its error is printed above); rerun the same command to resume")


def one_thread(job) -> None:
    torch.set_num_threads(1)
    job()


def models(cfg: PipelineConfig, work: Work) -> None:
    """Jacobi Forcing's rounds and the CLLM baseline: on CPU with workers > 1 side by side,
    one process each (round 1 trains beside CLLM's phases)."""
    if cfg.workers > 1 and cfg.device == "cpu":
        in_parallel([partial(jacobi_forcing, cfg, work), partial(cllm, cfg, work)])
    else:
        jacobi_forcing(cfg, work)
        cllm(cfg, work)


def models_then_ablation(cfg: PipelineConfig, work: Work) -> None:
    models(cfg, work)
    ablation(cfg, work)


STAGES = {"models": models, "all": models_then_ablation, "jacobi-forcing": jacobi_forcing, "cllm": cllm,
          "ablation": ablation}


def run(cfg: PipelineConfig = PipelineConfig(), folder: Path = Path("runs/pipeline"), stage: str = "models") -> dict:
    """One stage of the pipeline, resuming after the stages an earlier run in `folder` finished;
    returns the wall time of each stage in seconds. Round 1's trajectories come first. `models`
    (the default) trains both checkpoints, `all` then runs the ablation too."""
    work = Work(folder)
    round1_trajectories(cfg, work)
    STAGES[stage](cfg, work)
    return work.times


def collect_command(args, model, tokenizer) -> None:
    ids = prompts(tokenizer, args.prompts, seed=0)
    trajectories.save(args.out, trajectories.collect(model, ids, args.block_size, args.max_new_tokens,
                                                     workers=args.workers))


def pipeline_command(args) -> None:
    cfg = with_training(PipelineConfig(base=args.base, device=args.device, out=args.out, train_prompts=args.train_prompts,
                                       workers=args.workers, cllm_lam=args.cllm_lam), args.train_seed, args.lam)
    print(run(cfg, args.work, args.stage))


def add_commands(commands) -> None:
    p = commands.add_parser("collect", help="record Jacobi trajectories of training prompts (JSON lines)")
    model_args(p)
    p.add_argument("--block-size", type=at_least(1), default=16)
    p.add_argument("--prompts", type=at_least(1), default=PipelineConfig.train_prompts)
    p.add_argument("--max-new-tokens", type=at_least(1), default=task.MAX_ANSWER_TOKENS)
    p.add_argument("--workers", type=at_least(1), default=PipelineConfig.workers,
                   help="CPU processes (one thread each); the trajectories do not depend on their number")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(run=with_model(collect_command))

    p = commands.add_parser("pipeline", help="progressive Jacobi Forcing (3 rounds) beside the CLLM baseline "
                                             "(about 2 h on 2 cores); --stage all adds the ablation")
    p.add_argument("--work", type=Path, default=Path("runs/pipeline"),
                   help="trajectories and finished stages; a rerun resumes after the last finished stage")
    p.add_argument("--base", default="base", help="model to start from (embedded name, directory, alias or hub id)")
    device_args(p, dtype=False)
    p.add_argument("--out", type=Path, default=PipelineConfig.out,
                   help="checkpoints go to OUT/jacobi-forcing and OUT/cllm (jacobi_min/checkpoints rebuilds the shipped ones)")
    p.add_argument("--train-prompts", type=at_least(1), default=PipelineConfig.train_prompts,
                   help="training prompts whose trajectories are collected in each round")
    p.add_argument("--workers", type=at_least(1), default=PipelineConfig.workers,
                   help="CPU processes for trajectory collection and the ablation")
    p.add_argument("--stage", default="models", choices=list(STAGES),
                   help="models (default): both checkpoints; all: the models, then the ablation; or one stage "
                        "only: jacobi-forcing (rounds 1 to 3), cllm or ablation")
    p.add_argument("--train-seed", type=at_least(0), default=0,
                   help="seed of the training batches and noisy states (the trajectories stay the same)")
    p.add_argument("--lam", type=at_least(0.0, float), default=None,
                   help=f"λ, the AR loss weight of Jacobi Forcing's rounds 1 and 2 and the ablation (default {RECIPE['lam']}; "
                        f"round 3: {ROUND3['lam']})")
    p.add_argument("--cllm-lam", type=at_least(0.0, float), default=PipelineConfig.cllm_lam,
                   help="λ of the CLLM baseline")
    p.set_defaults(run=pipeline_command)
