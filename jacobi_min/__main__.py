"""jacobi-min commands: `python -m jacobi_min <command> --help` for each one's arguments."""
import argparse
import json
from dataclasses import replace
from pathlib import Path

import torch

from . import bench, demo, figures, pipeline, task, tiny, trajectories
from .model import CHECKPOINTS, load
from .train import TrainConfig, evaluate, train

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m jacobi_min", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("demo", help="AR vs Jacobi on held-out problems: identical output, TPF, speedup (~15 s)")
    p.add_argument("--models", nargs="+", default=["base", "jacobi-forcing"], help="embedded names, directories or hub ids")
    device_args(p)
    p.add_argument("--problems", type=int, default=6)
    p.add_argument("--block-size", type=int, default=16)

    p = commands.add_parser("train-base", help="train the embedded tiny Qwen2 and its tokenizer (~28 min on 2 cores)")
    p.add_argument("--out", type=Path, default=CHECKPOINTS / "base")
    p.add_argument("--steps", type=int, default=tiny.BaseConfig.steps)

    p = commands.add_parser("collect", help="record Jacobi trajectories of training prompts (JSON lines)")
    model_args(p)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--prompts", type=int, default=pipeline.PipelineConfig.train_prompts)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--out", type=Path, required=True)

    p = commands.add_parser("train", help="train on trajectories: Jacobi Forcing or the CLLM-style baseline")
    model_args(p)
    p.add_argument("--trajectories", type=Path, required=True)
    p.add_argument("--method", default="jacobi-forcing", choices=["jacobi-forcing", "cllm"])
    p.add_argument("--schedule", default="progressive", choices=trajectories.SCHEDULES)
    p.add_argument("--window", type=int, default=TrainConfig.window)
    p.add_argument("--steps", type=int, default=TrainConfig.steps)
    p.add_argument("--lr", type=float, default=TrainConfig.lr)
    p.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    p.add_argument("--eval-problems", type=int, default=TrainConfig.eval_problems)
    p.add_argument("--out", type=Path, required=True)

    p = commands.add_parser("eval", help="held-out accuracy, TPF of greedy Jacobi and repetition of one model")
    model_args(p)
    p.add_argument("--problems", type=int, default=500)
    p.add_argument("--block-size", type=int, default=16)

    p = commands.add_parser("pipeline", help="progressive Jacobi Forcing (2 rounds) + CLLM baseline + schedule ablation (~35 min)")
    p.add_argument("--work", type=Path, default=Path("runs"), help="where trajectories are written")
    p.add_argument("--base", default="base", help="model to start from (embedded name, directory, alias or hub id)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", type=Path, default=CHECKPOINTS, help="checkpoints go to OUT/jacobi-forcing and OUT/cllm")
    p.add_argument("--train-prompts", type=int, default=pipeline.PipelineConfig.train_prompts,
                   help="training prompts whose trajectories are collected in each round")
    p.add_argument("--stage", default="all", choices=pipeline.STAGES,
                   help="run one stage only; 'baselines' (CLLM + ablation) needs round 1's trajectories in --work")
    p = commands.add_parser("bench", help="every method on held-out problems: TPF, speedup, accuracy, cost model (~12 min)")
    p.add_argument("--problems", type=int, default=bench.BenchConfig.problems)
    p.add_argument("--block-sizes", type=int, nargs="+", default=[8, 16, 32, 64])
    device_args(p)
    p.add_argument("--out", type=Path, default=bench.RESULTS / "benchmark.json")

    p = commands.add_parser("sweep", help="multi-block + recycling over (n, K, r, pool) on one model: TPF, speedup (~5 min)")
    p.add_argument("--model", default="jacobi-forcing")
    p.add_argument("--problems", type=int, default=bench.SweepConfig.problems)

    p = commands.add_parser("exactness", help="Jacobi vs generate on real GSM8K + HumanEval prompts (needs requirements-qwen.txt)")
    model_args(p, default="qwen2.5-coder-0.5b-instruct")
    p.add_argument("--prompts", type=int, default=20, help="half GSM8K, half HumanEval")
    p.add_argument("--block-sizes", type=int, nargs="*", default=[4, 16, 64], help="greedy Jacobi")
    p.add_argument("--multiblock-sizes", type=int, nargs="*", default=[16],
                   help="multi-block decoding (K = 2, r = 0.25, pool 4)")
    p.add_argument("--recycling-sizes", type=int, nargs="*", default=[], help="rejection recycling alone (pool 4)")
    p.add_argument("--prompt-lookup", type=int, default=10, help="prompt-lookup draft length (0: skip)")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--out", type=Path, required=True, help="JSON report")

    p = commands.add_parser("cost-model", help="L(k): latency of one forward of k new tokens on a cached context")
    model_args(p, default="qwen2.5-coder-0.5b-instruct")
    p.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    p.add_argument("--context", type=int, default=256, help="tokens already in the KV cache")
    p.add_argument("--out", type=Path, required=True, help="JSON file")

    commands.add_parser("figures", help="rebuild every PNG in figures/ from the results files (seconds)")
    parser.epilog = "arguments of every command:\n" + "".join(
        "  " + sub.format_usage().replace("usage: ", "") for sub in commands.choices.values())
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.command == "train-base":
        print(tiny.train_base(args.out, replace(tiny.BaseConfig(), steps=args.steps)))
        return
    if args.command == "bench":
        cfg = bench.BenchConfig(problems=args.problems, block_sizes=args.block_sizes, device=args.device,
                                dtype=str(dtype_of(args)).removeprefix("torch."))
        print(bench.format_table(bench.run(cfg, args.out)))
        return
    if args.command == "sweep":
        for row in bench.sweep(bench.SweepConfig(model=args.model, problems=args.problems)):
            print(row)
        return
    if args.command == "figures":
        print("\n".join(str(p) for p in figures.build()))
        return
    if args.command == "pipeline":
        cfg = pipeline.PipelineConfig(base=args.base, device=args.device, out=args.out, train_prompts=args.train_prompts)
        print(pipeline.run(cfg, args.work, args.stage))
        return
    if args.command == "demo":
        for name in args.models:
            demo.run(*load(name, args.device, dtype_of(args)), name, args.problems, args.block_size)
            print()
        return
    model, tokenizer = load(args.model, args.device, dtype_of(args))
    if args.command == "eval":
        print(evaluate(model, tokenizer, task.problems("test", args.problems), args.block_size))
    elif args.command == "exactness":
        from . import exactness, realtasks
        ids = realtasks.prompts(tokenizer, args.prompts // 2, args.prompts - args.prompts // 2)
        report = exactness.exactness(model, tokenizer, ids, args.block_sizes, args.max_new_tokens,
                                     args.multiblock_sizes, args.recycling_sizes, lookup_tokens=args.prompt_lookup)
        report["meta"] = {"model": args.model, "dtype": str(model.dtype), "max_new_tokens": args.max_new_tokens,
                          "threads": torch.get_num_threads()}
        args.out.write_text(json.dumps(report, indent=1))
        print({name: f"{row['exact']}/{row['total']} exact" for name, row in report["methods"].items()})
    elif args.command == "cost-model":
        latency = bench.cost_model(model, args.ks, context=args.context)
        costs = {"k": args.ks, "latency_s": latency, "context": args.context,
                 "meta": {"model": args.model, "dtype": str(model.dtype), "threads": torch.get_num_threads()}}
        args.out.write_text(json.dumps(costs, indent=1))
        print({k: f"L(k)/L(1) = {t / latency[0]:.2f}" for k, t in zip(args.ks, latency)})
    elif args.command == "collect":
        ids = pipeline.prompts(tokenizer, args.prompts, seed=0)
        trajectories.save(args.out, trajectories.collect(model, ids, args.block_size, args.max_new_tokens))
    elif args.command == "train":
        cfg = TrainConfig(method=args.method, schedule=args.schedule, window=args.window, steps=args.steps,
                          lr=args.lr, batch_size=args.batch_size, eval_problems=args.eval_problems)
        train(model, tokenizer, trajectories.load(args.trajectories), cfg, args.out)


if __name__ == "__main__":
    main()
