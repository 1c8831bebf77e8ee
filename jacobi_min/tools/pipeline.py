"""Progressive Jacobi Forcing on the embedded model, with its CLLM baseline, in one command.

The recipe is the table `RECIPE`: round 1 is `TrainConfig()`, every other training what it changes
from round 1. `ROUNDS` says what each round trains on; `progressive_round` runs one:

    collect the current model's trajectories at n = block (right answers only, from round 3 on)
    train `runs` copies of it (seeds s, s + 1, …) and average their weights:  θ̄ = (1/k) Σ θ_i
    continue the average with each of `polishes` (50 steps) and average again: θ = ½(θ_ar(θ̄) + θ_long(θ̄))

Rounds 1 to 3 make the shipped model (two more rounds of round 3's kind failed their seed check:
docs/results.md). CLLM's trainer runs on round 1's trajectories for rounds 1 and 2's steps.

Decision: the official recipe is two rounds (lr 1e-5, then 1e-6) on a 7B model; a tiny model needs
higher learning rates, AdamW ε = 1e-4, a random offset, a third round on right answers only, weight
averaging and the polishes to reach ~4 tokens per forward (each measured in docs/results.md).
"""
import copy
import json
import sys
import time
from argparse import BooleanOptionalAction
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from functools import partial
from pathlib import Path

import torch

from .. import trajectories
from ..baselines import train_diffusion, train_drafter
from ..train import BUCKETS, METHODS, TrainConfig, save_checkpoint
from ..trajectories import SCHEDULES
from ..utils import atomic_write, pmap
from . import task
from .cli import MODEL_HELP, at_least, device_args, load_model, model_args, with_model
from .evaluate import HeldOutCheck, is_correct, prompt_ids, train_and_check


@dataclass
class Round:
    """One round: trajectories at n = `block` of the model so far (right answers only with
    `right_only`), `runs` training runs under `config` averaged, then `polishes` averaged."""
    block: int
    config: TrainConfig
    runs: int = 1
    right_only: bool = False
    polishes: dict = field(default_factory=dict)


RECIPE = {  # every training of the recipe, as what it changes from round 1 (TrainConfig's defaults)
    "round 1": {},  # the base's n = 16 trajectories: 1,600 steps of 8, lr 5e-4, λ 10, AdamW ε 1e-4, random offset
    "round 2": {"steps": 800, "lr": 3e-4},  # the round-1 model's n = 32 trajectories
    "round 3": {"steps": 800, "lr": 3e-4, "lam": 30.0, "undivided_consistency": True},  # no official 1/T; 2 seeds
    "polish ar": {"steps": 50, "lr": 3e-5, "ar_on_prompt": False, "consistency_on": ()},  # from their average: AR only
    "polish long": {"steps": 50, "lr": 3e-5, "ar_on_prompt": False, "consistency_on": ("long",), "lam": 30.0,
                    "undivided_consistency": True},  # the same, long answers keeping their consistency loss
    "cllm": {"method": "cllm", "lam": 30.0, "label_smoothing": 0.1},  # CLLM's trainer: round 1's steps, then round 2's
}


ROUNDS = (Round(16, TrainConfig(**RECIPE["round 1"])), Round(32, TrainConfig(**RECIPE["round 2"])),  # n = 16, then 32
          Round(32, TrainConfig(**RECIPE["round 3"]), runs=2, right_only=True,  # the shipped model's last round
                polishes={"ar": TrainConfig(**RECIPE["polish ar"]), "long": TrainConfig(**RECIPE["polish long"])}))


@dataclass
class PipelineConfig:
    rounds: tuple = ROUNDS
    train_prompts: int = 4000
    max_new_tokens: int = task.MAX_ANSWER_TOKENS
    workers: int = 2
    batch: int = 16  # prompts decoded together in each worker's collection forwards
    seed: int = 0
    base: str = "base"  # the model to start from: an embedded name, a directory, qwen.ALIAS or a hub id (cli.load_model)
    device: str = "cpu"
    out: Path = Path("runs/checkpoints")  # checkpoints land in out/jacobi-forcing and out/cllm
    check: HeldOutCheck = field(default_factory=HeldOutCheck)  # the held-out check of every training run


def with_training(cfg: PipelineConfig, seed: int) -> PipelineConfig:
    """`cfg` with every training run seeded by `seed` (a round's runs by seed, seed + 1, …)."""
    def seeded(r: Round) -> Round:
        return replace(r, config=replace(r.config, seed=seed),
                       polishes={k: replace(p, seed=seed) for k, p in r.polishes.items()})
    return replace(cfg, rounds=tuple(seeded(r) for r in cfg.rounds))


def prompts(tokenizer, count: int, seed: int) -> list[list[int]]:
    return [prompt_ids(tokenizer, p) for p in task.problems("train", count, seed=seed)]


def collect(model, tokenizer, cfg: PipelineConfig, block_size: int, desc: str) -> list[dict]:
    ids = prompts(tokenizer, cfg.train_prompts, cfg.seed)
    return trajectories.collect(model, ids, block_size, cfg.max_new_tokens, seed=cfg.seed, desc=desc,
                                workers=cfg.workers, batch=cfg.batch)


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
        atomic_write(path, lambda tmp: torch.save({"model": model.state_dict(), "log": log}, tmp))
        self.done(name, start)
        return log


def flat(settings: dict, prefix: str = "") -> dict:
    """{"round1": {"seed": 0}} as {"round1.seed": 0}."""
    out = {}
    for key, value in settings.items():
        out.update(flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


def round1_trajectories(cfg: PipelineConfig, work: Work) -> list[dict]:
    work.settle("round1", {"base": cfg.base, "prompts": cfg.train_prompts, "seed": cfg.seed,
                           "block": cfg.rounds[0].block, "max_new_tokens": cfg.max_new_tokens})
    model, tokenizer = load_model(cfg.base, cfg.device)
    return work.trajectories("round1", lambda: collect(model, tokenizer, cfg, cfg.rounds[0].block,
                                                       f"trajectories n={cfg.rounds[0].block} (base)"))


def jacobi_forcing(cfg: PipelineConfig, work: Work) -> None:
    """Every round in turn, from the base model; the checkpoint records the settings and each stage's wall time."""
    model, tokenizer = load_model(cfg.base, cfg.device)
    before, logs = {}, []
    for number, spec in enumerate(cfg.rounds, start=1):
        before[f"round{number}"] = asdict(spec)
        logs.append(progressive_round(model, tokenizer, cfg, work, number, before))
    settings = {k: v for k, v in asdict(cfg).items() if k != "out"}
    seconds = {k: v for k, v in work.times.items() if not k.startswith("cllm")}
    save_checkpoint(model, tokenizer, cfg.out / "jacobi-forcing", cfg.rounds[-1].config, join_logs(*logs),
                    extra={"pipeline": settings, "seconds": seconds, "log": "each round's first run"})


def progressive_round(model, tokenizer, cfg: PipelineConfig, work: Work, number: int, before: dict) -> list[dict]:
    """Round `number` (see the module's docstring) from `model`, left in `model`; returns its first run's log."""
    spec, name = cfg.rounds[number - 1], f"round{number}"
    problems = task.problems("train", cfg.train_prompts, seed=cfg.seed)

    def make():
        records = collect(model, tokenizer, cfg, spec.block, f"trajectories n={spec.block} (round {number - 1})")
        return right_answers(records, problems, tokenizer) if spec.right_only else records

    if number == 1:
        traj = round1_trajectories(cfg, work)
    else:
        work.settle(name, {**before, "prompts": cfg.train_prompts, "seed": cfg.seed})
        traj = work.trajectories(name, make)
    if spec.right_only and not traj:
        raise ValueError(f"round {number}: none of the {len(problems)} answers is right; there is nothing to train on")
    runs = {f"train_{name}" + (f"_s{i}" if spec.runs > 1 else ""): replace(spec.config, seed=spec.config.seed + i)
            for i in range(spec.runs)}
    logs = averaged_runs(model, tokenizer, traj, runs, cfg, work, before)
    polishes = {f"{name}_polish_{k}": p for k, p in spec.polishes.items()}
    if polishes:
        averaged_runs(model, tokenizer, traj, polishes, cfg, work, {**before, "runs": [asdict(c) for c in runs.values()]})
    return logs[0]


def averaged_runs(model, tokenizer, traj: list[dict], runs: dict[str, TrainConfig], cfg: PipelineConfig,
                  work: Work, before: dict) -> list[dict]:
    """Train a copy of `model` under each config (side by side, one process each, on CPU with
    workers > 1), then leave the average of their weights in `model` (one run: its weights);
    returns their logs."""
    start = copy.deepcopy(model.state_dict())

    def run(name: str, config: TrainConfig) -> list[dict]:  # trains, or reads back a finished run
        model.load_state_dict(start)
        work.settle(name, {**before, name: asdict(config)})
        return trained(work, name, model, tokenizer, traj, config, cfg.check)

    if len(runs) > 1 and cfg.workers > 1 and cfg.device == "cpu":
        side_by_side([partial(run, name, config) for name, config in runs.items()])
    logs, states = [], []
    for name, config in runs.items():
        logs.append(run(name, config))
        states.append(copy.deepcopy(model.state_dict()))
    model.load_state_dict(average(states))
    return logs


def trained(work: Work, name: str, model, tokenizer, traj: list[dict], config: TrainConfig, check) -> list[dict]:
    """Stage `name`: `model` trained under `config` with the held-out `check`, or as an earlier run left it; its log."""
    return work.training(name, model, lambda resume: train_and_check(model, tokenizer, traj, config, check=check,
                                                                     resume=resume))


def cllm_phases(cfg: PipelineConfig) -> tuple[TrainConfig, TrainConfig]:
    """The CLLM baseline's phases: rounds 1 and 2 with CLLM's changes, both at round 1's lr (round 2's is
    for Jacobi Forcing's re-collected trajectories), phase 2 at seed + 1 (else phase 1's batches)."""
    changes, (round1, round2) = RECIPE["cllm"], (r.config for r in cfg.rounds[:2])
    return replace(round1, **changes), replace(round2, **changes, lr=round1.lr, seed=round2.seed + 1)


def cllm(cfg: PipelineConfig, work: Work) -> None:
    """The CLLM baseline on the round-1 trajectories (CLLM has no progressive rounds): CLLM's
    trainer and label smoothing under Jacobi Forcing's optimiser schedule, round 1's steps, then
    round 2's (`cllm_phases`). The two models then differ only in what the paper changes:
    examples per prompt, packing, noise schedule, mask and re-collection."""
    traj = round1_trajectories(cfg, work)
    model, tokenizer = load_model(cfg.base, cfg.device)
    phase1, phase2 = cllm_phases(cfg)
    work.settle("cllm_phase1", {"phase1": asdict(phase1)})
    work.settle("cllm_phase2", {"phase1": asdict(phase1), "phase2": asdict(phase2)})
    log1 = trained(work, "cllm_phase1", model, tokenizer, traj, phase1, cfg.check)
    log2 = trained(work, "cllm_phase2", model, tokenizer, traj, phase2, cfg.check)
    save_checkpoint(model, tokenizer, cfg.out / "cllm", phase2, join_logs(log1, log2),
                    extra={"phase1": asdict(phase1), "seconds": work.times["cllm_phase1"] + work.times["cllm_phase2"]})


def models(cfg: PipelineConfig, work: Work) -> None:
    """Jacobi Forcing's rounds and the CLLM baseline: on CPU with workers > 1 side by side,
    one process each (round 1 trains beside CLLM's phases)."""
    round1_trajectories(cfg, work)  # first: the two side by side would both collect them
    if cfg.workers > 1 and cfg.device == "cpu":
        side_by_side([partial(jacobi_forcing, cfg, work), partial(cllm, cfg, work)])
    else:
        jacobi_forcing(cfg, work)
        cllm(cfg, work)


def side_by_side(jobs: list) -> None:
    """Run each job() in a process of its own (one thread each), and wait for all of them."""
    pmap(lambda job: job(), jobs, len(jobs))


def baselines(cfg: PipelineConfig, work: Work) -> None:
    """The families the paper argues against by their pre-registered recipes (`jacobi_min.baselines`), to out/<name>."""
    base = load_model(cfg.base, cfg.device)
    for name, train in (("block-diffusion", train_diffusion), ("drafter", train_drafter)):
        work.result(f"baseline_{name}", lambda: train(base, cfg.out / name))  # each resumes mid-run


STAGES = {"models": models, "jacobi-forcing": jacobi_forcing, "cllm": cllm, "baselines": baselines}


def run(cfg: PipelineConfig = PipelineConfig(), folder: Path = Path("runs/pipeline"), stage: str = "models") -> dict:
    """One stage of the pipeline, resuming after the stages an earlier run in `folder` finished;
    returns the wall time of each stage in seconds. `models` (the default) trains both checkpoints,
    `baselines` the two families beside them."""
    work = Work(folder)
    STAGES[stage](cfg, work)
    return work.times


def settings(cls, args):
    """The dataclass `cls` (TrainConfig, HeldOutCheck) from the flags `add_flags` made for its fields."""
    return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


def train_config(args) -> TrainConfig:
    """The `train` command's TrainConfig: one flag per field, --ar-only for consistency_on=()."""
    return replace(settings(TrainConfig, args), consistency_on=() if args.ar_only else tuple(args.consistency_on))


def train_command(args, model, tokenizer) -> None:
    cfg = train_config(args)
    resume = args.out.with_name(args.out.name + ".resume.pt")
    if resume.exists() and not args.resume:
        sys.exit(f"{resume} holds an interrupted run: add --resume to continue it, or delete it to start over")
    train_and_check(model, tokenizer, trajectories.load(args.trajectories)[:args.limit], cfg, args.out,
                    check=settings(HeldOutCheck, args), resume=resume)


def add_flags(parser, cls) -> None:
    """One flag per field of the dataclass `cls`, its help from the field's; a boolean: --x and --no-x, or its own flag."""
    for f in fields(cls):
        default = f.default_factory() if f.default is MISSING else f.default
        name, help = f.metadata["flag"] or "--" + f.name.replace("_", "-"), f.metadata["help"]
        if isinstance(default, bool):
            action = ("store_false" if default else "store_true") if f.metadata["flag"] else BooleanOptionalAction
            parser.add_argument(name, dest=f.name, action=action, default=default, help=help)
        elif isinstance(default, tuple):
            parser.add_argument(name, dest=f.name, nargs="+", default=list(default), help=help,
                                choices=list(BUCKETS) if f.name == "consistency_on" else None)
        elif f.name in CHOICES:
            parser.add_argument(name, dest=f.name, default=default, choices=CHOICES[f.name], help=help)
        else:
            low = 0.0 if isinstance(default, float) else (1 if f.name in POSITIVE else 0)
            kind = str if default is None else at_least(low, type(default))
            parser.add_argument(name, dest=f.name, type=kind, default=default, help=help,
                                metavar=name[2:].replace("-", "_").upper())


CHOICES = {"method": METHODS, "schedule": SCHEDULES, "autocast": ("bfloat16",)}
POSITIVE = {"window", "steps", "batch_size", "save_every", "every", "block_size"}


def collect_command(args, model, tokenizer) -> None:
    ids = prompts(tokenizer, args.prompts, seed=0)
    trajectories.save(args.out, trajectories.collect(model, ids, args.block_size, args.max_new_tokens,
                                                     workers=args.workers, batch=args.batch))


def pipeline_command(args) -> None:
    cfg = with_training(PipelineConfig(base=args.base, device=args.device, out=args.out, train_prompts=args.train_prompts,
                                       workers=args.workers, batch=args.batch), args.train_seed)
    print(run(cfg, args.work, args.stage))


def batch_arg(parser) -> None:
    parser.add_argument("--batch", type=at_least(1), default=PipelineConfig.batch,
                        help="prompts decoded together in one forward during collection (the trajectories do not "
                             "depend on it)")


def add_commands(commands) -> None:
    p = commands.add_parser("collect", help="record Jacobi trajectories of training prompts (JSON lines)")
    model_args(p)
    p.add_argument("--block-size", type=at_least(1), default=16)
    p.add_argument("--prompts", type=at_least(1), default=PipelineConfig.train_prompts)
    p.add_argument("--max-new-tokens", type=at_least(1), default=task.MAX_ANSWER_TOKENS)
    p.add_argument("--workers", type=at_least(1), default=PipelineConfig.workers,
                   help="CPU processes (one thread each); the trajectories do not depend on their number")
    batch_arg(p)
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(run=with_model(collect_command))

    p = commands.add_parser("train", help="train on trajectories: Jacobi Forcing, or CLLM's trainer")
    model_args(p)
    p.add_argument("--trajectories", type=Path, required=True)
    add_flags(p, TrainConfig)
    add_flags(p, HeldOutCheck)
    p.add_argument("--ar-only", action="store_true", help="no noisy blocks at all: the AR loss on the same packed batches")
    p.add_argument("--limit", type=at_least(1), default=None, help="train on the first LIMIT trajectories of the file")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from its snapshot OUT.resume.pt (written every --save-every steps)")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(run=with_model(train_command))

    add_pipeline(commands)


def add_pipeline(commands) -> None:
    p = commands.add_parser("pipeline", help="progressive Jacobi Forcing (3 rounds) beside the CLLM baseline "
                                             "(about 2 h on 2 cores)")
    p.add_argument("--work", type=Path, default=Path("runs/pipeline"),
                   help="trajectories and finished stages; a rerun resumes after the last finished stage")
    p.add_argument("--base", default="base", help=f"model to start from: {MODEL_HELP}")
    device_args(p, dtype=False)
    p.add_argument("--out", type=Path, default=PipelineConfig.out,
                   help="checkpoints go to OUT/<name> (jacobi-forcing, cllm; the baselines: block-diffusion, drafter); "
                        "jacobi_min/checkpoints rebuilds the shipped ones")
    p.add_argument("--train-prompts", type=at_least(1), default=PipelineConfig.train_prompts,
                   help="training prompts whose trajectories are collected in each round")
    p.add_argument("--workers", type=at_least(1), default=PipelineConfig.workers,
                   help="CPU processes for trajectory collection (and training runs side by side)")
    batch_arg(p)
    p.add_argument("--stage", default="models", choices=list(STAGES),
                   help="models (default): both checkpoints; or one stage: jacobi-forcing (every round), cllm, or "
                        "baselines (block diffusion and the drafter, ~1 h)")
    p.add_argument("--train-seed", type=at_least(0), default=0,
                   help="seed of the training batches and noisy states (the trajectories stay the same)")
    p.set_defaults(run=pipeline_command)
