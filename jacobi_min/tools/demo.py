"""The main job: AR and Jacobi decoding side by side on held-out problems (`demo`), and one
block converging forward by forward as a GIF (`animate`).

Prints, per problem, whether Jacobi's tokens equal greedy AR's, the answer
check and tokens per forward (TPF); then the wall-clock ratio of the two
(measured interleaved, prefill excluded from neither: both pay it once) and
one block's trajectory, one line per iteration: decided tokens shown, wrong
draft tokens as '·'.
"""
from pathlib import Path

import torch

from ..jacobi import BlockTrajectory, greedy_decode, jacobi_decode
from ..model import embedded_names, load
from . import plots, task
from .cli import at_least, device_args, dtype_of
from .evaluate import is_correct, prompt_ids
from .timing import timed


def trajectory_lines(block: BlockTrajectory, tokenizer, width: int = 110) -> list[str]:
    """One line per state: tokens equal to the fixed point, '·' where the draft is still wrong."""
    lines = []
    for k, state in enumerate(block.states):
        shown = [tokenizer.decode([t]) if t == f else " ·" for t, f in zip(state, block.fixed_point)]
        label = "draft" if k == 0 else f"it {k:2d}"
        lines.append(f"{label} |" + "".join(shown).replace("\n", "⏎")[:width])
    return lines


def run(model, tokenizer, name: str, problems: int = 2, block_size: int = 16, max_new_tokens: int = task.MAX_ANSWER_TOKENS) -> None:
    """Decode `problems` held-out problems of each length bucket with AR and Jacobi; print the comparison."""
    print(f"model: {name} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters), "
          f"block size n = {block_size}, {model.device}, {torch.get_num_threads()} threads, {model.dtype}")
    ar_time = jacobi_time = 0.0
    tokens = forwards = same = 0
    first = None
    held_out = [(length, p) for length in task.BUCKETS for p in task.problems("test", problems, length=length)]
    for length, p in held_out:
        ids = prompt_ids(tokenizer, p)
        ar, t_ar = timed(lambda: greedy_decode(model, ids, max_new_tokens))
        jac, t_jac = timed(lambda: jacobi_decode(model, ids, block_size, max_new_tokens))
        ar_time, jacobi_time = ar_time + t_ar, jacobi_time + t_jac
        tokens, forwards = tokens + sum(jac.accepted), forwards + jac.forwards
        same += jac.tokens == ar.tokens
        first = first or jacobi_decode(model, ids, block_size, max_new_tokens, record=True)
        print(f"  {length:6s}  identical={jac.tokens == ar.tokens}  correct={is_correct(tokenizer, jac.tokens, p)} (answer {p.answer:2d})  "
              f"tokens {len(jac.tokens):3d}  forwards AR {ar.forwards:3d} / Jacobi {jac.forwards:3d}  TPF {jac.tpf:.2f}")
    print(f"\nidentical outputs: {same}/{len(held_out)}   TPF {tokens / forwards:.2f}   "
          f"wall-clock speedup over AR {ar_time / jacobi_time:.2f}x")
    print("\ntrajectory of the first block of the first problem:")
    print("\n".join(trajectory_lines(first.blocks[0], tokenizer)))


def demo_command(args) -> None:
    for name in args.models:
        run(*load(name, args.device, dtype_of(args)), name, args.problems)
        print()


def animate_command(args) -> None:
    """Record greedy Jacobi on the prompt with each model; animate the chosen block of each."""
    blocks = {}
    for name in args.models:
        model, tokenizer = load(name, args.device)
        text = task.as_prompt(args.prompt) if name in embedded_names() else args.prompt
        recorded = jacobi_decode(model, tokenizer(text)["input_ids"], args.block_size,
                                 args.block_size * (args.block + 1), record=True).blocks
        if args.block >= len(recorded):
            raise ValueError(f"{name}'s answer ends in block {len(recorded) - 1}: choose --block < {len(recorded)}")
        blocks[name] = recorded[args.block]
    frames = plots.animation(blocks, tokenizer, args.out)
    print(f"{args.out}: {frames} frames, block {args.block} at n = {args.block_size}; forwards to its fixed point: "
          + ", ".join(f"{name} {len(b.states) - 1}" for name, b in blocks.items()))


def add_commands(commands) -> None:
    p = commands.add_parser("demo", help="AR vs Jacobi on held-out problems: identical output, TPF, speedup (~15 s)")
    p.add_argument("--models", nargs="+", default=["base", "jacobi-forcing"], help="embedded names, directories or hub ids")
    device_args(p)
    p.add_argument("--problems", type=at_least(1), default=2, help="held-out problems per length bucket")
    p.set_defaults(run=demo_command)

    p = commands.add_parser("animate", help="a GIF of one block of your prompt's answer converging forward by forward, "
                                            "one panel per model (seconds)")
    p.add_argument("prompt", help="a question (put in the embedded models' format) or any text")
    p.add_argument("--models", nargs="+", default=["base", "jacobi-forcing"],
                   help="models sharing one tokenizer: embedded names or directories")
    p.add_argument("--block-size", type=at_least(1), default=16)
    p.add_argument("--block", type=at_least(0), default=0, help="which block of the answer (0: the first)")
    device_args(p, dtype=False)
    p.add_argument("--out", type=Path, default=Path("trajectory.gif"))
    p.set_defaults(run=animate_command)
