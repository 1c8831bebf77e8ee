"""Where greedy Jacobi decoding (n = 16) spends its forwards on long answers: the kind of token each
forward had to correct.

A forward that does not accept its whole draft commits draft[1:acc] and the correction g[acc-1]: the
first token the draft had wrong. Per kind of position (margins.py's kinds, read off the model's own
answer), the correction rate

    rate(kind) = corrections at positions of that kind / positions of that kind

is the share of such tokens that the model could not predict from the noisy draft in front of them.
Forwards = corrections + whole blocks accepted (+ the last); TPF is tokens / forwards.

Usage: python corrections.py OUT.json PROBLEMS MODEL=LABEL [MODEL=LABEL ...]  (held-out long answers)
"""
import json
import sys
from itertools import accumulate

import torch
from margins import KINDS, kinds

from jacobi_min.jacobi import jacobi_decode
from jacobi_min.model import load
from jacobi_min.tools import task
from jacobi_min.tools.evaluate import prompt_ids


def corrected(result) -> list[int]:
    """Output positions of the tokens that a forward committed as corrections (draft rejected)."""
    ends = list(accumulate(result.accepted, initial=1))  # out[0] is the prefill's token
    return [end - 1 for end, kept, fed in zip(ends[1:], result.accepted, result.fed)
            if kept < fed and end < len(result.tokens)]  # the last forward ends the answer (EOS or budget)


def main() -> None:
    torch.set_num_threads(1)
    out, count, specs = sys.argv[1], int(sys.argv[2]), [s.split("=") for s in sys.argv[3:]]
    problems = task.problems("test", count, seed=0, length="long")
    table = {"problems": count, "length": "long", "block_size": 16, "models": {}}
    for name, label in specs:
        model, tokenizer = load(name)
        positions, corrections, tokens, forwards = dict.fromkeys(KINDS, 0), dict.fromkeys(KINDS, 0), 0, 0
        for problem in problems:
            result = jacobi_decode(model, prompt_ids(tokenizer, problem), 16, task.MAX_ANSWER_TOKENS)
            kind = kinds([tokenizer.decode([i]) for i in result.tokens])
            for k in kind:
                positions[k] += 1
            for t in corrected(result):
                corrections[kind[t]] += 1
            tokens, forwards = tokens + sum(result.accepted), forwards + result.forwards
        table["models"][label] = {"model": name, "tpf": tokens / forwards, "forwards": forwards,
                                  "kinds": {k: {"positions": positions[k], "corrections": corrections[k],
                                                "rate": corrections[k] / max(positions[k], 1)} for k in KINDS}}
        print(label, round(tokens / forwards, 3), {k: round(v["rate"], 3) for k, v in table["models"][label]["kinds"].items()})
    with open(out, "w") as f:
        json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
