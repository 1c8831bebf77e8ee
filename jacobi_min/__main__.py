"""jacobi-min commands: `python -m jacobi_min <command> --help` for each one's arguments."""
import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch

from . import bench, controls, demo, figures, pipeline, plots, recipe, task, tiny, trajectories
from .generate import run as run_generate, unseen_words
from .jacobi import jacobi_decode
from .model import CHECKPOINTS, embedded_names, load
from .sampling import sampler
from .train import METHODS, TrainConfig, train

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def device_args(parser):
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", default=None, choices=DTYPES, help="default: float32 on cpu, bfloat16 on cuda")


def model_args(parser, default="base"):
    parser.add_argument("--model", default=default,
                        help="embedded name (base, jacobi-forcing, cllm), qwen2.5-coder-0.5b-instruct, directory or hub id")
    device_args(parser)


def dtype_of(args) -> torch.dtype:
    return DTYPES[args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")]


def at_least(low, cast=int):
    """An argparse type: `cast` of the argument, which must be >= low."""
    def parse(text: str):
        value = cast(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        return value
    parse.__name__ = cast.__name__  # argparse names it in "invalid int value"
    return parse


def probability(text: str) -> float:
    """An argparse type: a float in (0, 1]."""
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1], got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Every command and its arguments; the epilog lists every command's usage."""
    parser = argparse.ArgumentParser(prog="python -m jacobi_min", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (decoding_commands, training_commands, pipeline_commands, measuring_commands):
        add(commands)
    parser.epilog = "arguments of every command:\n" + "".join(
        "  " + sub.format_usage().replace("usage: ", "") for sub in commands.choices.values())
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def decoding_commands(commands) -> None:
    """demo, animate and generate: decoding the embedded models (or any model)."""
    p = commands.add_parser("demo", help="AR vs Jacobi on held-out problems: identical output, TPF, speedup (~15 s)")
    p.add_argument("--models", nargs="+", default=["base", "jacobi-forcing"], help="embedded names, directories or hub ids")
    device_args(p)
    p.add_argument("--problems", type=at_least(1), default=2, help="held-out problems per length bucket")
    p.add_argument("--block-size", type=at_least(1), default=16)

    p = commands.add_parser("animate", help="a GIF of one block of your prompt's answer converging forward by forward, "
                                            "one panel per model (seconds)")
    p.add_argument("prompt", help="a question (put in the embedded models' format) or any text")
    p.add_argument("--models", nargs="+", default=["base", "jacobi-forcing"],
                   help="models sharing one tokenizer: embedded names or directories")
    p.add_argument("--block-size", type=at_least(1), default=16)
    p.add_argument("--block", type=at_least(0), default=0, help="which block of the answer (0: the first)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", type=Path, default=Path("trajectory.gif"))

    p = commands.add_parser("generate", help="decode your own prompt: text streamed as verified, then TPF and tokens/s")
    p.add_argument("prompt", nargs="?", help="the prompt; read from stdin when left out")
    model_args(p, default="jacobi-forcing")
    p.add_argument("--chat", action="store_true", help="put the prompt in the tokenizer's chat template")
    p.add_argument("--raw", action="store_true",
                   help="the embedded models: decode the text as it is (by default a plain question is put in "
                        "their format, 'Question: …\\nAnswer:')")
    p.add_argument("--block-size", type=at_least(1), default=16, help="n, tokens per block")
    p.add_argument("--blocks", type=at_least(1), default=1, help="K, blocks in flight (the paper's best: 2)")
    p.add_argument("--pool-size", type=at_least(0), default=0, help="rejection-recycling pool (the paper's: 4)")
    p.add_argument("--temperature", type=at_least(0.0, float), default=0.0, help="0: greedy")
    p.add_argument("--top-k", type=at_least(0), default=0, help="0: off")
    p.add_argument("--top-p", type=probability, default=1.0, help="1: off")
    p.add_argument("--seed", type=at_least(0), default=0, help="sampling seed: the noise of position t comes from (seed, t)")
    p.add_argument("--max-new-tokens", type=at_least(1), default=task.MAX_ANSWER_TOKENS,
                   help="the embedded models' longest answers fit the default")
    p.add_argument("--compare", action="store_true", help="decode again with AR (same sampler): tokens, TPF, tokens/s")
    p.add_argument("--no-color", action="store_true", help="do not colour each forward's tokens")


def training_commands(commands) -> None:
    """train-base, collect and train: building the embedded models step by step."""
    p = commands.add_parser("train-base", help="train the embedded tiny Qwen2 and its tokenizer (~45 min on 2 cores)")
    p.add_argument("--out", type=Path, default=Path("runs/base"),
                   help="resumes from OUT/resume.pt when present; jacobi_min/checkpoints/base rebuilds the shipped model")
    p.add_argument("--steps", type=at_least(1), default=tiny.BaseConfig.steps)
    p.add_argument("--init", default="", help="continue from this checkpoint (its tokenizer kept) with a new warm-up and cosine")
    p.add_argument("--lr", type=float, default=tiny.BaseConfig.lr, help="peak learning rate")
    p.add_argument("--seed", type=int, default=tiny.BaseConfig.seed, help="seed of the training problems and the order")
    p.add_argument("--bucket-weights", type=float, nargs=3, default=tiny.BaseConfig.bucket_weights,
                   metavar=("SHORT", "MEDIUM", "LONG"), help="how often each step draws from each length bucket")
    p.add_argument("--layers", type=at_least(1), default=tiny.BaseConfig.layers, help="transformer layers of a new model")

    p = commands.add_parser("collect", help="record Jacobi trajectories of training prompts (JSON lines)")
    model_args(p)
    p.add_argument("--block-size", type=at_least(1), default=16)
    p.add_argument("--prompts", type=at_least(1), default=pipeline.PipelineConfig.train_prompts)
    p.add_argument("--max-new-tokens", type=at_least(1), default=task.MAX_ANSWER_TOKENS)
    p.add_argument("--out", type=Path, required=True)

    p = commands.add_parser("train", help="train on trajectories: Jacobi Forcing, CLLM or the CLLM-style variant")
    model_args(p)
    p.add_argument("--trajectories", type=Path, required=True)
    p.add_argument("--method", default="jacobi-forcing", choices=METHODS,
                   help="cllm: CLLM's trainer (one example per block); cllm-style: one noisy block per prompt")
    p.add_argument("--schedule", default="progressive", choices=trajectories.SCHEDULES)
    p.add_argument("--window", type=at_least(1), default=TrainConfig.window)
    p.add_argument("--steps", type=at_least(1), default=TrainConfig.steps)
    p.add_argument("--lr", type=at_least(0.0, float), default=TrainConfig.lr)
    p.add_argument("--lam", type=at_least(0.0, float), default=TrainConfig.lam, help="λ, the AR loss weight")
    p.add_argument("--adam-eps", type=at_least(0.0, float), default=TrainConfig.adam_eps, help="AdamW's ε")
    p.add_argument("--random-offset", action="store_true",
                   help="start each example's progressive schedule at a random block of the window")
    p.add_argument("--label-smoothing", type=at_least(0.0, float), default=TrainConfig.label_smoothing,
                   help="ε of the AR loss (CLLM: 0.1)")
    p.add_argument("--answer-only-ar", action="store_true", help="the AR loss covers the answer's tokens only")
    p.add_argument("--consistency-on", nargs="+", default=list(TrainConfig.consistency_on), choices=list(task.BUCKETS),
                   help="length buckets whose examples get noisy blocks (the others train on the AR loss alone)")
    p.add_argument("--ar-only", action="store_true", help="no noisy blocks at all: the AR loss on the same packed batches")
    p.add_argument("--limit", type=at_least(1), default=None, help="train on the first LIMIT trajectories of the file")
    p.add_argument("--batch-size", type=at_least(1), default=TrainConfig.batch_size)
    p.add_argument("--seed", type=at_least(0), default=TrainConfig.seed, help="seed of the batches and noisy states")
    p.add_argument("--eval-problems", type=at_least(0), default=TrainConfig.eval_problems)
    p.add_argument("--eval-every", type=at_least(1), default=TrainConfig.eval_every,
                   help="steps between held-out scores (also scored at steps 0, 50 and 100)")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted run from its snapshot OUT.resume.pt (written every 200 steps)")
    p.add_argument("--out", type=Path, required=True)


def pipeline_commands(commands) -> None:
    """eval and pipeline: scoring models, and building them all in one command."""
    p = commands.add_parser("eval", help="held-out accuracy, TPF of greedy Jacobi and repetition of models, per length bucket")
    p.add_argument("--models", "--model", nargs="+", default=["base"],
                   help="embedded names (base, jacobi-forcing, cllm) or checkpoint directories")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--problems", type=at_least(1), default=500, help="per length bucket")
    p.add_argument("--lengths", nargs="+", default=["mix"], choices=task.LENGTHS,
                   help="length buckets (mix: all three, drawn together)")
    p.add_argument("--block-size", type=at_least(1), default=16)
    p.add_argument("--workers", type=at_least(1), default=2, help="CPU processes (one thread each)")
    p.add_argument("--labels", nargs="+", help="names the models are recorded under (default: --models)")
    p.add_argument("--out", type=Path, help="JSON file for the scores")

    p = commands.add_parser("pipeline", help="progressive Jacobi Forcing (2 rounds) + CLLM baseline + ablation "
                                "(--stage jacobi-forcing: about 2 h on 2 cores)")
    p.add_argument("--work", type=Path, default=Path("runs/pipeline"),
                   help="trajectories and finished stages; a rerun resumes after the last finished stage")
    p.add_argument("--base", default="base", help="model to start from (embedded name, directory, alias or hub id)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", type=Path, default=pipeline.PipelineConfig.out,
                   help="checkpoints go to OUT/jacobi-forcing and OUT/cllm (jacobi_min/checkpoints rebuilds the shipped ones)")
    p.add_argument("--train-prompts", type=at_least(1), default=pipeline.PipelineConfig.train_prompts,
                   help="training prompts whose trajectories are collected in each round")
    p.add_argument("--workers", type=at_least(1), default=pipeline.PipelineConfig.workers,
                   help="CPU processes for trajectory collection and the ablation")
    p.add_argument("--stage", default="all", choices=["all", *pipeline.STAGES],
                   help="run one stage only: ablation, jacobi-forcing (rounds 1 and 2) or cllm")
    p.add_argument("--train-seed", type=at_least(0), default=0,
                   help="seed of the training batches and noisy states (the trajectories stay the same)")
    p.add_argument("--lam", type=at_least(0.0, float), default=None,
                   help=f"λ, the AR loss weight of every training stage (default {pipeline.PipelineConfig().round1.lam})")


def measuring_commands(commands) -> None:
    """controls, recipe, bench, sweep, exactness, cost-model and figures: the measurements."""
    p = commands.add_parser("controls", help="short fine-tunes that each change one setting of the recipe: held-out "
                                             "accuracy during training and per bucket after (~90 min on 2 cores)")
    p.add_argument("--work", type=Path, default=Path("runs/controls"), help="trajectories and finished arms; a rerun resumes")
    p.add_argument("--arms", nargs="+", choices=list(controls.ARMS), default=list(controls.ARMS), metavar="ARM",
                   help="arms to run (default: all of " + ", ".join(controls.ARMS) + ")")
    p.add_argument("--steps", type=at_least(1), default=controls.ControlsConfig.steps)
    p.add_argument("--problems", type=at_least(1), default=controls.ControlsConfig.problems, help="per length bucket")
    p.add_argument("--workers", type=at_least(1), default=controls.ControlsConfig.workers)
    p.add_argument("--results", type=Path, default=controls.ControlsConfig.results)
    p = commands.add_parser("recipe", help="Jacobi Forcing on the real Qwen: its own GSM8K trajectories, round 1, "
                                           "before/after (needs requirements-qwen.txt; hours on a CPU)")
    p.add_argument("--preset", default="cpu", choices=list(recipe.PRESETS),
                   help="cpu: a reduced run for 2 cores; gpu: the paper's round-1 settings (with --device cuda)")
    p.add_argument("--base", default=recipe.Recipe.base, help="a chat model: the alias, a directory or a hub id")
    p.add_argument("--work", type=Path, default=Path("runs/qwen"),
                   help="trajectories, snapshots and the trained checkpoint; a rerun resumes")
    p.add_argument("--results", type=Path, default=bench.RESULTS / "qwen_jacobi_forcing.json")
    p = commands.add_parser("bench", help="every method on held-out problems of each length bucket: TPF, speedup, "
                                          "accuracy, cost model (~12 min on 2 cores)")
    p.add_argument("--problems", type=at_least(1), default=bench.BenchConfig.problems, help="per length bucket")
    p.add_argument("--lengths", nargs="+", default=list(task.BUCKETS), choices=list(task.BUCKETS))
    p.add_argument("--block-sizes", type=at_least(1), nargs="+", default=bench.BenchConfig().block_sizes)
    p.add_argument("--workers", type=at_least(1), default=2, help="CPU processes (one thread each), one length bucket each")
    device_args(p)
    p.add_argument("--out", type=Path, default=bench.RESULTS / "benchmark.json")

    p = commands.add_parser("sweep", help="multi-block + recycling over (n, K, r, pool, ours/official) on one model: "
                                          "TPF, speedup (~17 min on 2 cores)")
    p.add_argument("--model", default="jacobi-forcing")
    p.add_argument("--problems", type=at_least(1), default=bench.SweepConfig.problems)
    p.add_argument("--length", default=bench.SweepConfig.length, choices=list(task.BUCKETS))

    p = commands.add_parser("exactness", help="Jacobi vs generate on real GSM8K + HumanEval prompts (needs requirements-qwen.txt)")
    model_args(p, default="qwen2.5-coder-0.5b-instruct")
    p.add_argument("--prompts", type=at_least(2), default=20, help="half GSM8K, half HumanEval")
    p.add_argument("--block-sizes", type=at_least(1), nargs="*", default=[4, 16, 64], help="greedy Jacobi")
    p.add_argument("--multiblock-sizes", type=at_least(1), nargs="*", default=[16],
                   help="multi-block decoding (K = 2, r = 0.25, pool 4)")
    p.add_argument("--recycling-sizes", type=at_least(1), nargs="*", default=[], help="rejection recycling alone (pool 4)")
    p.add_argument("--prompt-lookup", type=at_least(0), default=10, help="prompt-lookup draft length (0: skip)")
    p.add_argument("--max-new-tokens", type=at_least(1), default=128)
    p.add_argument("--out", type=Path, required=True, help="JSON report")

    p = commands.add_parser("cost-model", help="L(k): latency of one forward of k new tokens on a cached context")
    model_args(p, default="qwen2.5-coder-0.5b-instruct")
    p.add_argument("--ks", type=at_least(1), nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    p.add_argument("--context", type=at_least(1), default=256, help="tokens already in the KV cache")
    p.add_argument("--out", type=Path, required=True, help="JSON file")

    commands.add_parser("figures", help="rebuild every PNG in figures/ from the results files (seconds)")


def train_config(args) -> TrainConfig:
    """The `train` command's TrainConfig."""
    return TrainConfig(method=args.method, schedule=args.schedule, window=args.window, random_offset=args.random_offset,
                       steps=args.steps, lr=args.lr, adam_eps=args.adam_eps, lam=args.lam,
                       label_smoothing=args.label_smoothing, ar_on_prompt=not args.answer_only_ar,
                       consistency_on=() if args.ar_only else tuple(args.consistency_on), batch_size=args.batch_size, seed=args.seed,
                       eval_problems=args.eval_problems, eval_every=args.eval_every)


def generate_command(args) -> None:
    """Stream the decoded prompt (argument or stdin), then one line of statistics."""
    text = sys.stdin.read() if args.prompt is None else args.prompt
    model, tokenizer = load(args.model, args.device, dtype_of(args))
    if args.chat and not tokenizer.chat_template:
        sys.exit(f"error: --chat: the tokenizer of {args.model} has no chat template")
    embedded = args.model in embedded_names()
    if embedded and not args.raw and not args.chat:
        text = embedded_prompt(text)
    if args.chat:
        ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                            return_dict=True)["input_ids"]
    else:
        ids = tokenizer(text)["input_ids"]
    if embedded and (unseen := unseen_words(tokenizer, text)):
        print(f"note: {args.model} never saw {', '.join(map(repr, unseen))} in training (its tokenizer splits "
              f"{'it' if len(unseen) == 1 else 'them'}); expect a poor answer. Names it knows: "
              f"{', '.join(task.NAMES[:5])}, …", file=sys.stderr)
    pick = sampler(args.temperature, args.top_k, args.top_p, args.seed)
    run_generate(model, tokenizer, ids, pick, args.block_size, args.blocks, args.pool_size, args.max_new_tokens,
                 color=sys.stdout.isatty() and not args.no_color, compare=args.compare)


def animate_command(args) -> None:
    """Record greedy Jacobi on the prompt with each model; animate the chosen block of each."""
    blocks = {}
    for name in args.models:
        model, tokenizer = load(name, args.device)
        text = embedded_prompt(args.prompt) if name in embedded_names() else args.prompt
        recorded = jacobi_decode(model, tokenizer(text)["input_ids"], args.block_size,
                                 args.block_size * (args.block + 1), record=True).blocks
        if args.block >= len(recorded):
            raise ValueError(f"{name}'s answer ends in block {len(recorded) - 1}: choose --block < {len(recorded)}")
        blocks[name] = recorded[args.block]
    frames = plots.animation(blocks, tokenizer, args.out)
    print(f"{args.out}: {frames} frames, block {args.block} at n = {args.block_size}; forwards to its fixed point: "
          + ", ".join(f"{name} {len(b.states) - 1}" for name, b in blocks.items()))


def embedded_prompt(text: str) -> str:
    """The embedded models' one prompt format around a question typed with or without its
    "Question:" label (the models never saw a question without the "Answer:" line after it);
    a prompt that already has that line, as it is."""
    if "\nAnswer:" in text:
        return text
    return task.format_prompt(text.strip().removeprefix("Question:").strip())


def eval_command(args) -> None:
    """Scores of every model on every length bucket: printed, and written to --out."""
    labels = args.labels or args.models
    if len(labels) != len(args.models):
        raise ValueError(f"--labels names {len(labels)} models, --models {len(args.models)}")
    if len(set(labels)) != len(labels):
        raise ValueError(f"each model needs a label of its own, got {labels}")
    table = bench.scores(args.models, args.lengths, args.problems, args.block_size, args.workers, device=args.device)
    for label, row in zip(labels, table):
        for length, s in row.items():
            print(f"{label}  {length:6s}  accuracy {s['accuracy']:.1%}  TPF {s['tpf']:.2f}  repetition {s['repetition']:.3f}")
    if args.out:
        args.out.write_text(json.dumps({"problems": args.problems, "block_size": args.block_size,
                                        "models": dict(zip(labels, args.models)),
                                        "scores": dict(zip(labels, table))}, indent=1))


def controls_command(args) -> None:
    """Run (or read back) the chosen arms; print each one's accuracy and TPF per bucket."""
    cfg = controls.ControlsConfig(arms={a: controls.ARMS[a] for a in args.arms}, steps=args.steps,
                                  problems=args.problems, workers=args.workers, results=args.results)
    for name, arm in controls.run(cfg, args.work)["arms"].items():
        print(f"{name:32s} " + "  ".join(f"{length} {s['accuracy']:.0%} / TPF {s['tpf']:.2f}"
                                         for length, s in arm["scores"].items()))


def main(argv=None):
    """Run one command; a bad input (a ValueError or a missing file) ends with its message, not a traceback."""
    args = build_parser().parse_args(argv)
    try:
        run(args)
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")


def train_base_command(args) -> None:
    cfg = replace(tiny.BaseConfig(), steps=args.steps, init=args.init, lr=args.lr, seed=args.seed,
                  bucket_weights=tuple(args.bucket_weights), layers=args.layers)
    print(tiny.train_base(args.out, cfg))


def bench_command(args) -> None:
    cfg = bench.BenchConfig(problems=args.problems, lengths=args.lengths, block_sizes=args.block_sizes,
                            workers=args.workers, device=args.device, dtype=str(dtype_of(args)).removeprefix("torch."))
    print(bench.format_table(bench.run(cfg, args.out)))


def sweep_command(args) -> None:
    for row in bench.sweep(bench.SweepConfig(model=args.model, problems=args.problems, length=args.length)):
        print(row)


def figures_command(args) -> None:
    print("\n".join(str(p) for p in figures.build()))


def pipeline_command(args) -> None:
    cfg = pipeline.with_training(pipeline.PipelineConfig(base=args.base, device=args.device, out=args.out,
                                                         train_prompts=args.train_prompts, workers=args.workers),
                                 args.train_seed, args.lam)
    print(pipeline.run(cfg, args.work, args.stage))


def recipe_command(args) -> None:
    """The real-Qwen recipe; prints TPF, speedup and accuracy before and after."""
    summary = recipe.run(replace(recipe.PRESETS[args.preset], base=args.base), args.work, args.results)
    for name in summary["before"]["methods"]:
        before, after = summary["before"]["methods"][name], summary["after"]["methods"][name]
        print(f"{name:16s} TPF {before['tpf']:.2f} -> {after['tpf']:.2f}, "
              f"speedup {before['speedup']:.2f}x -> {after['speedup']:.2f}x")
    print(f"accuracy {summary['before']['accuracy']:.1%} -> {summary['after']['accuracy']:.1%}")


def demo_command(args) -> None:
    for name in args.models:
        demo.run(*load(name, args.device, dtype_of(args)), name, args.problems, args.block_size)
        print()


def exactness_command(args, model, tokenizer) -> None:
    """Every decoder against generate on real GSM8K + HumanEval prompts; the report goes to --out."""
    from . import exactness, realtasks
    ids = realtasks.prompts(tokenizer, args.prompts // 2, args.prompts - args.prompts // 2)
    report = exactness.exactness(model, tokenizer, ids, args.block_sizes, args.max_new_tokens,
                                 args.multiblock_sizes, args.recycling_sizes, lookup_tokens=args.prompt_lookup)
    report["meta"] = {"model": args.model, "dtype": str(model.dtype), "max_new_tokens": args.max_new_tokens,
                      "threads": torch.get_num_threads()}
    args.out.write_text(json.dumps(report, indent=1))
    print({name: f"{row['exact']}/{row['total']} exact" for name, row in report["methods"].items()})


def cost_model_command(args, model, tokenizer) -> None:
    latency = bench.cost_model(model, args.ks, context=args.context)
    costs = {"k": args.ks, "latency_s": latency, "context": args.context,
             "meta": {"model": args.model, "dtype": str(model.dtype), "threads": torch.get_num_threads()}}
    args.out.write_text(json.dumps(costs, indent=1))
    print({k: f"L(k)/L(1) = {t / latency[0]:.2f}" for k, t in zip(args.ks, latency)})


def collect_command(args, model, tokenizer) -> None:
    ids = pipeline.prompts(tokenizer, args.prompts, seed=0)
    trajectories.save(args.out, trajectories.collect(model, ids, args.block_size, args.max_new_tokens))


def train_command(args, model, tokenizer) -> None:
    cfg = train_config(args)
    resume = args.out.with_name(args.out.name + ".resume.pt")
    if resume.exists() and not args.resume:
        sys.exit(f"{resume} holds an interrupted run: add --resume to continue it, or delete it to start over")
    train(model, tokenizer, trajectories.load(args.trajectories)[:args.limit], cfg, args.out, resume=resume)


COMMANDS = {"train-base": train_base_command, "bench": bench_command, "sweep": sweep_command, "eval": eval_command,
            "figures": figures_command, "pipeline": pipeline_command, "controls": controls_command,
            "recipe": recipe_command, "generate": generate_command, "demo": demo_command, "animate": animate_command}
MODEL_COMMANDS = {"exactness": exactness_command, "cost-model": cost_model_command, "collect": collect_command,
                  "train": train_command}  # these get the loaded --model as well


def run(args) -> None:
    if args.command in MODEL_COMMANDS:
        MODEL_COMMANDS[args.command](args, *load(args.model, args.device, dtype_of(args)))
    else:
        COMMANDS[args.command](args)


if __name__ == "__main__":
    main()
