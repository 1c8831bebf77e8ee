"""The main job: AR and Jacobi decoding side by side on held-out problems.

Prints, per problem, whether Jacobi's tokens equal greedy AR's, the answer
check and tokens per forward (TPF); then the wall-clock ratio of the two
(measured interleaved, prefill excluded from neither: both pay it once) and
one block's trajectory, one line per iteration: decided tokens shown, wrong
draft tokens as '·'.
"""
import torch

from . import task
from .bench import timed
from .jacobi import BlockTrajectory, greedy_decode, jacobi_decode
from .train import is_correct, prompt_ids


def trajectory_lines(block: BlockTrajectory, tokenizer, width: int = 110) -> list[str]:
    """One line per state: tokens equal to the fixed point, '·' where the draft is still wrong."""
    lines = []
    for k, state in enumerate(block.states):
        shown = [tokenizer.decode([t]) if t == f else " ·" for t, f in zip(state, block.fixed_point)]
        label = "draft" if k == 0 else f"it {k:2d}"
        lines.append(f"{label} |" + "".join(shown).replace("\n", "⏎")[:width])
    return lines


def run(model, tokenizer, name: str, problems: int = 2, block_size: int = 16, max_new_tokens: int = task.MAX_ANSWER_TOKENS) -> dict:
    """Decode `problems` held-out problems of each length bucket with AR and Jacobi; print the
    comparison; return the totals."""
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
    return {"identical": same, "problems": len(held_out), "tpf": tokens / forwards, "speedup": ar_time / jacobi_time}
