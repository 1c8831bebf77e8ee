"""Grade-school math word problems that ship with the code (GSM8K in miniature).

A problem is a chain of 2-4 arithmetic steps on one quantity ("Mia has 7
apples. She buys 5 more ..."), with a worked solution of one equation per step
and a final line ``#### <answer>``, as in GSM8K:

    Question: Mia has 7 apples. Mia buys 3 bags with 4 apples in each bag. ...
    Answer: Mia starts with 7 apples. 3 * 4 = 12. 7 + 12 = 19. ...
    #### 19

Every number, intermediate result and answer lies in 1..99; the operations are
+, -, * and exact /. The split is a function of the problem's arithmetic
(start value, operations, operands), hashed: a test problem's arithmetic never
occurs in the training split, whatever names or objects dress it.
"""
import hashlib
import random
import re
from dataclasses import dataclass

NAMES = ["Mia", "Ben", "Ava", "Leo", "Zoe", "Sam", "Ivy", "Max", "Lily", "Noah",
         "Emma", "Omar", "Ruby", "Finn", "Nora", "Jack", "Ella", "Theo", "Maya", "Luke"]
ITEMS = ["apples", "marbles", "stickers", "books", "cookies", "pencils", "shells",
         "stamps", "cards", "coins", "eggs", "toys", "beads", "flowers", "candies"]
CONTAINERS = ["bags", "boxes", "packs", "jars", "baskets"]
MAX_VALUE = 99
TEST_FRACTION = 10  # one arithmetic chain in ten belongs to the test split


@dataclass(frozen=True)
class Problem:
    question: str
    solution: str  # worked steps, ending in "#### <answer>"
    answer: int

    @property
    def prompt(self) -> str:
        return format_prompt(self.question)

    @property
    def completion(self) -> str:
        return " " + self.solution


def format_prompt(question: str) -> str:
    """The one prompt format of the embedded models: question -> solution."""
    return f"Question: {question}\nAnswer:"


def _step(rng, x, name, item):
    """One story event on the quantity x: (sentence, equations, new x, signature)."""
    other = rng.choice([n for n in NAMES if n != name])
    kind = rng.choice(["add", "add", "sub", "sub", "mul", "div", "packs"])
    if kind == "add" and x + 2 <= MAX_VALUE:
        k = rng.randint(2, min(20, MAX_VALUE - x))
        text = rng.choice([f"{name} buys {k} more {item}.", f"{name} finds {k} more {item}.",
                           f"{other} gives {name} {k} {item}."])
        return text, [f"{x} + {k} = {x + k}."], x + k, ("+", k)
    if kind == "sub" and x > 2:
        k = rng.randint(1, min(20, x - 1))
        text = rng.choice([f"{name} gives {k} {item} to {other}.", f"{name} loses {k} {item}.",
                           f"{name} uses {k} {item}."])
        return text, [f"{x} - {k} = {x - k}."], x - k, ("-", k)
    if kind == "mul" and 2 * x <= MAX_VALUE:
        k = rng.randint(2, min(5, MAX_VALUE // x))
        text = f"Then {name} has {k} times as many {item} as before."
        return text, [f"{x} * {k} = {x * k}."], x * k, ("*", k)
    if kind == "div":
        divisors = [k for k in range(2, 10) if x % k == 0 and x // k >= 1]
        if divisors:
            k = rng.choice(divisors)
            text = f"{name} splits the {item} into {k} equal groups and keeps one group."
            return text, [f"{x} / {k} = {x // k}."], x // k, ("/", k)
    if kind == "packs":
        k, m = rng.randint(2, 6), rng.randint(2, 9)
        if x + k * m <= MAX_VALUE:
            box = rng.choice(CONTAINERS)
            text = f"{name} buys {k} {box} with {m} {item} in each {box[:-1] if box != 'boxes' else 'box'}."
            return text, [f"{k} * {m} = {k * m}.", f"{x} + {k * m} = {x + k * m}."], x + k * m, ("p", k, m)
    return None


def _make(rng) -> tuple[Problem, tuple]:
    """Draw one problem with 2-4 equations; returns it with its arithmetic signature."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    steps = rng.randint(2, 4)
    x = rng.randint(2, 50)
    start, sentences, equations, signature = x, [], [], [x]
    while len(equations) < steps:
        event = _step(rng, x, name, item)
        if event is None or len(equations) + len(event[1]) > steps:
            continue
        text, eqs, x, sig = event
        sentences.append(text)
        equations += eqs
        signature.append(sig)
    question = f"{name} has {start} {item}. " + " ".join(sentences) + f" How many {item} does {name} have now?"
    solution = f"{name} starts with {start} {item}. " + " ".join(equations) + f"\n#### {x}"
    return Problem(question, solution, x), tuple(signature)


def split_of(signature: tuple) -> str:
    """'test' for one arithmetic chain in TEST_FRACTION (by hash), else 'train'."""
    digest = hashlib.sha256(repr(signature).encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") % TEST_FRACTION == 0 else "train"


def problems(split: str, count: int, seed: int = 0) -> list[Problem]:
    """The first `count` problems of `split` ('train' or 'test') drawn with `seed`."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    rng, out = random.Random(f"{split}-{seed}"), []
    while len(out) < count:
        problem, signature = _make(rng)
        if split_of(signature) == split:
            out.append(problem)
    return out


_ANSWER = re.compile(r"####\s*(-?\d+)")


def extract_answer(text: str) -> int | None:
    """The integer after the first '####', or None when the text has none."""
    match = _ANSWER.search(text)
    return int(match.group(1)) if match else None


def is_correct(text: str, answer: int) -> bool:
    return extract_answer(text) == answer
