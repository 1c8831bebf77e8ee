"""Where a model's long answers are fragile: the margin of the reference token, by kind of position.

Teacher-forced on the reference solution of each held-out long problem (prompt + answer + EOS, one
forward), at every answer position t with reference token r_t:

    margin_t = z_t[r_t] - max_{v != r_t} z_t[v]      (logits z; > 0: greedy decoding keeps the reference)

Positions by kind, read off the reference tokens:
    stop       '.\n' after the last day's last equation (the count says: no day after this one)
    next day   '.' after a day's last equation when another day follows (the count says: go on)
    day number the digits of k in "Day k of d"
    result     the digits after '=' (each equation's result)
    carried    the digits that open an equation or give the final answer (the result before, carried on)
    constant   the other digits (the question's numbers: operands, the d of "of d", the start)
    word       everything else (words, operators, punctuation, EOS)
Per kind: positions, mean margin, how many are below 0 and below 2. A count that greedy decoding loses
shows as a low margin on "stop" or "next day"; arithmetic as a low margin on "result".

Usage: python margins.py OUT.json PROBLEMS MODEL=LABEL [MODEL=LABEL ...]
"""
import json
import sys

import torch

from jacobi_min.model import load
from jacobi_min.tools import task
from jacobi_min.tools.evaluate import prompt_ids

KINDS = ("stop", "next day", "day number", "result", "carried", "constant", "word")


def kinds(pieces: list[str]) -> list[str]:
    """The kind of every answer position, from the decoded reference tokens."""
    out, days, word = [], 0, ""  # word: the last token before t that is neither a digit nor a space
    for t, piece in enumerate(pieces):
        after = pieces[t + 1] if t + 1 < len(pieces) else ""
        if piece == ".\n":
            out.append("stop" if days else "word")
        elif piece == "." and after == " Day" and days:
            out.append("next day")
        elif not piece.isdigit():
            out.append("word")
        elif word == " Day":
            out.append("day number")
        elif word == " =":
            out.append("result")
        elif word in (":", ".", "####") and days:
            out.append("carried")
        else:
            out.append("constant")
        days += piece == " Day"
        word = word if piece.isdigit() or piece == " " else piece
    return out


@torch.inference_mode()
def margins(model, tokenizer, problem) -> tuple[list[float], list[str]]:
    """Per answer position: the reference token's margin and its kind."""
    prompt = prompt_ids(tokenizer, problem)
    answer = tokenizer(problem.completion)["input_ids"] + [tokenizer.eos_token_id]
    logits = model(input_ids=torch.tensor([prompt + answer])).logits[0, len(prompt) - 1:-1].float()  # (A, V)
    target = torch.tensor(answer)
    own = logits.gather(1, target[:, None])[:, 0]
    rival = logits.scatter(1, target[:, None], float("-inf")).max(-1).values
    pieces = [tokenizer.decode([i]) for i in answer]
    return (own - rival).tolist(), kinds(pieces)


def summary(values: list[float]) -> dict:
    """Positions, mean margin, and how many margins are below 0 (greedy leaves the reference) and below 2."""
    v = torch.tensor(values)
    return {"positions": len(values), "mean": round(v.mean().item(), 3), "below_0": int((v < 0).sum()),
            "below_2": int((v < 2).sum())}


def main() -> None:
    torch.set_num_threads(1)
    out, count, specs = sys.argv[1], int(sys.argv[2]), [s.split("=") for s in sys.argv[3:]]
    problems = task.problems("test", count, seed=0, length="long")
    result = {"problems": count, "length": "long", "models": {}}
    for name, label in specs:
        model, tokenizer = load(name)
        by_kind = {kind: [] for kind in KINDS}
        for problem in problems:
            for m, kind in zip(*margins(model, tokenizer, problem)):
                by_kind[kind].append(m)
        result["models"][label] = {"model": name, "kinds": {kind: summary(v) for kind, v in by_kind.items()}}
        print(label, {kind: (s["mean"], s["below_0"]) for kind, s in result["models"][label]["kinds"].items()})
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
