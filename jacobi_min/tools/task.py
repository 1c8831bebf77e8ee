"""Grade-school math word problems that ship with the code (GSM8K in miniature).

Two families, one format: a question, a worked solution of one equation per
step, and a final line ``#### <answer>``, as in GSM8K.

- story (short answers): a chain of 1-4 arithmetic steps on one quantity,

      Question: Mia has 7 apples. Mia buys 3 bags with 4 apples in each bag. ...
      Answer: Mia starts with 7 apples. 3 * 4 = 12. 7 + 12 = 19. ...
      #### 19

- routine (long answers): the same 1-3 events repeat every day for d days,
  and the solution works through every day, so a two-line question has an
  answer of up to ~400 tokens (25 blocks of 16):

      Question: Ben has 23 stickers. Every day, Ben buys 6 more stickers and
      gives 4 stickers to Mia. How many stickers does Ben have after 9 days?
      Answer: Ben starts with 23 stickers. Day 1 of 9: 23 + 6 = 29. 29 - 4 = 25.
      Day 2 of 9: 25 + 6 = 31. 31 - 4 = 27. ... Day 9 of 9: ... = 41.
      #### 41

  ("of 9" repeats the count on every day, so that whether to stop after a
  day is read off the line itself: without it the tiny base model
  lost count on half the long answers)

The length knob is the number of equations in the solution; LENGTHS names
three ranges of it whose answers fall in the token BUCKETS (answer tokens
with the embedded tokenizer, EOS included; checked by the tests), and
"mix" draws the three with equal probability. Every number, intermediate
result and answer lies in 1..99; the operations are +, -, * and exact /
(routines: + and -). The split is a function of the problem's arithmetic
(start value, operations, operands, days), hashed: a test problem's
arithmetic never occurs in the training split, whatever names or objects
dress it.
"""
import hashlib
import operator
import random
import re
from dataclasses import dataclass

# the answer-length buckets, defined beside the training loop that batches by them
from ..train import BUCKETS, MAX_ANSWER_TOKENS, bucket_of  # noqa: F401

NAMES = """Mia Ben Ava Leo Zoe Sam Ivy Max Lily Noah Emma Omar Ruby Finn Nora Jack Ella Theo Maya
Luke Tom Ann Amy Bob Dan Eve Gus Hal Ian Jay Kim Lee Meg Ned Pam Ray Sue Ted Una Val Wes
Zac Abby Adam Alex Amir Anna Aria Beth Bill Cara Carl Chen Cody Dana Dave Dina Drew Eden
Eli Erin Ezra Fay Gina Greg Hana Hugo Iris Isla Ivan Jade Jake Jane Joel John Jose Kai
Kara Kate Kyle Lana Lara Liam Lina Lisa Lucy Mark Mary Matt Mila Nick Nina Noor Olga
Owen Paul Pete Priya Quinn Raj Rosa Rose Ryan Sara Sean Seth Tara Tess Tina Toby Vera
Wade Will Yara Yuki Zara Aiden Alice Bella Chloe Clara Daisy David Diego Elena Emily
Felix Grace Hazel Henry Jonas Julia Kevin Laura Lucas Mateo Oscar Peter Sofia Susan
Victor Wendy Xavier Yusuf Zane Oliver Sophie""".split()
ITEMS = """apples marbles stickers books cookies pencils shells stamps cards coins eggs toys beads
flowers candies balloons buttons crayons erasers grapes lemons muffins oranges peaches
plums ribbons rocks seeds socks spoons tickets cupcakes pebbles potatoes rings nuts
bottles feathers puzzles keys""".split()
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


def as_prompt(text: str) -> str:
    """The embedded models' prompt around a question typed with or without its "Question:"
    label (the models never saw a question without the "Answer:" line after it); a prompt
    that already has that line, as it is."""
    if "\nAnswer:" in text:
        return text
    return format_prompt(text.strip().removeprefix("Question:").strip())


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


def _story(rng) -> tuple[Problem, tuple]:
    """One short problem with 1-4 equations; returns it with its arithmetic signature."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    steps = rng.randint(1, 4)
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


ROUTINE_EVENTS = {"+": ["buys {k} more {item}", "finds {k} more {item}", "gets {k} {item} from {other}"],
                  "-": ["gives {k} {item} to {other}", "loses {k} {item}", "uses {k} {item}"]}


def _routine_values(start: int, events: list[tuple[str, int]], days: int) -> list[int] | None:
    """Every value the quantity takes, day by day and event by event (None if one leaves 1..99)."""
    values = [start]
    for _ in range(days):
        for op, k in events:
            values.append(values[-1] + k if op == "+" else values[-1] - k)
            if not 1 <= values[-1] <= MAX_VALUE:
                return None
    return values


def _routine(rng, days: int) -> tuple[Problem, tuple]:
    """One long problem: 1-3 events repeated every day for `days` days, worked day by day."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    while True:
        events = [(rng.choice("+-"), rng.randint(1, 12)) for _ in range(rng.randint(1, 3))]
        start = rng.randint(2, MAX_VALUE - 9)
        values = _routine_values(start, events, days)
        if values is not None:
            break
    phrases = [rng.choice(ROUTINE_EVENTS[op]).format(k=k, item=item, other=rng.choice([n for n in NAMES if n != name]))
               for op, k in events]
    listed = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    question = (f"{name} has {start} {item}. Every day, {name} {listed}. "
                f"How many {item} does {name} have after {days} days?")
    lines, i = [], 0
    for day in range(1, days + 1):
        equations = []
        for op, k in events:
            equations.append(f"{values[i]} {op} {k} = {values[i + 1]}.")
            i += 1
        lines.append(f"Day {day} of {days}: " + " ".join(equations))
    solution = f"{name} starts with {start} {item}. " + " ".join(lines) + f"\n#### {values[-1]}"
    return Problem(question, solution, values[-1]), ("routine", start, tuple(events), days)


LENGTHS = ("mix", *BUCKETS)
ROUTINE_DAYS = {"medium": (2, 10), "long": (4, 24)}  # days drawn before the length check
_PRETOKEN = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*"
                       r"|\s*[\r\n]+|\s+(?!\S)|\s+")  # Qwen2's pre-tokenizer pattern, letters and digits in ASCII


def answer_length(problem: Problem) -> int:
    """Tokens of the completion plus EOS: Qwen2's pre-tokens (single digits, words with their
    space), which the embedded tokenizer keeps whole, so this is its token count (tested).
    The task's text is ASCII, where Qwen2's \\p{L} and \\p{N} are [A-Za-z] and [0-9]: one
    Python regex counts them about 8 times faster than the tokenizers library (tested equal)."""
    return len(_PRETOKEN.findall(problem.completion)) + 1


def _make(rng, length: str) -> tuple[Problem, tuple]:
    """One problem whose answer falls in bucket `length` ('mix': a bucket drawn uniformly)."""
    bucket = rng.choice(list(BUCKETS)) if length == "mix" else length
    lo, hi = BUCKETS[bucket]
    while True:
        problem, signature = _story(rng) if bucket == "short" else _routine(rng, rng.randint(*ROUTINE_DAYS[bucket]))
        if lo <= answer_length(problem) <= hi:
            return problem, signature


def split_of(signature: tuple) -> str:
    """'test' for one arithmetic chain in TEST_FRACTION (by hash), else 'train'."""
    digest = hashlib.sha256(repr(signature).encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") % TEST_FRACTION == 0 else "train"


def problems(split: str, count: int, seed: int = 0, length: str = "mix") -> list[Problem]:
    """The first `count` problems of `split` ('train' or 'test') drawn with `seed`, whose
    answers fall in the bucket `length` ('short', 'medium', 'long', or 'mix' for all three)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if length not in LENGTHS:
        raise ValueError(f"length must be one of {LENGTHS}, got {length!r}")
    rng, out = random.Random(f"{split}-{seed}-{length}"), []
    while len(out) < count:
        problem, signature = _make(rng, length)
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


EQUATION = re.compile(r"(\d+) ([-+*/]) (\d+) = (\d+)")
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def wrong_equations(text: str) -> list[str]:
    """Every equation 'a op b = c' of a worked answer whose c is not a op b: an arithmetic slip,
    as opposed to a wrong plan (a wrong number copied, an operation or a day left out)."""
    return [f"{a} {op} {b} = {c}" for a, op, b, c in EQUATION.findall(text) if OPS[op](int(a), int(b)) != int(c)]
