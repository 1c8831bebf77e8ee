"""The embedded task: answers in their length buckets, the split by arithmetic, worked answers that check."""
import re

import pytest

from jacobi_min.model import CHECKPOINTS
from jacobi_min.tools import task


def arithmetic(problem: task.Problem) -> str:
    """The solution without its first sentence (the only one that names a person or an object)."""
    return problem.solution.split(". ", 1)[1]


@pytest.mark.parametrize("length", list(task.BUCKETS))
def test_answers_fall_in_their_bucket_and_the_tokenizer_agrees(length):
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(CHECKPOINTS / "base")
    lo, hi = task.BUCKETS[length]
    problems = task.problems("test", 200, seed=3, length=length)
    for p in problems:
        tokens = len(tokenizer(p.completion)["input_ids"]) + 1  # EOS
        assert tokens == task.answer_length(p)
        assert lo <= tokens <= hi and task.bucket_of(tokens) == length
    if length == "long":  # most of a window of w = 16 blocks of n = 16
        assert sum(map(task.answer_length, problems)) / len(problems) >= 12 * 16


def test_answer_length_counts_qwen2_pre_tokens():
    """The ASCII regex behind answer_length splits the task's text exactly as Qwen2's pre-tokenizer."""
    from transformers import Qwen2Tokenizer
    pre_tokenizer = Qwen2Tokenizer().backend_tokenizer.pre_tokenizer
    for split in ("train", "test"):
        for p in task.problems(split, 300, seed=5):
            for text in (p.prompt, p.completion):
                assert [m.span() for m in task._PRETOKEN.finditer(text)] == [span for _, span in pre_tokenizer.pre_tokenize_str(text)]


def test_short_stories_take_one_to_four_steps_with_any_of_many_names():
    """A newcomer's first question (one step, "Tom gives 17 stickers to Ann") is in the task's distribution."""
    problems = task.problems("train", 400, seed=2, length="short")
    assert {len(task.EQUATION.findall(p.solution)) for p in problems} == {1, 2, 3, 4}
    assert {"Tom", "Ann", "Mia", "Ben"} <= set(task.NAMES) and len(set(task.NAMES)) == len(task.NAMES) >= 100
    assert len(set(task.ITEMS)) == len(task.ITEMS) >= 40
    assert len({p.question.split()[0] for p in problems}) >= 80


def test_mix_draws_every_bucket():
    counts = {name: 0 for name in task.BUCKETS}
    for p in task.problems("train", 600, length="mix"):
        counts[task.bucket_of(task.answer_length(p))] += 1
    assert all(150 <= c <= 250 for c in counts.values()), counts


@pytest.mark.parametrize("length", list(task.BUCKETS))
def test_no_test_arithmetic_occurs_in_training(length):
    train = {arithmetic(p) for p in task.problems("train", 3000, seed=0, length=length)}
    test = {arithmetic(p) for p in task.problems("test", 500, seed=0, length=length)}
    assert train and test and not train & test


@pytest.mark.parametrize("length", list(task.BUCKETS))
def test_every_worked_answer_checks_itself(length):
    for p in task.problems("train", 300, seed=1, length=length):
        equations = task.EQUATION.findall(p.solution)
        assert equations and task.extract_answer(p.solution) == p.answer == int(equations[-1][3])
        for a, op, b, c in equations:
            assert task.OPS[op](int(a), int(b)) == int(c) and all(1 <= int(v) <= task.MAX_VALUE for v in (a, b, c))
        start = int(re.match(r"\w+ starts with (\d+)", p.solution).group(1))
        assert int(equations[0][0]) == start or equations[0][1] == "*"  # a pack of k * m comes first
        assert task.wrong_equations(p.solution) == []
        days = re.search(r"after (\d+) days", p.question)
        if days:  # a routine: every day worked, each starting from the day before
            total = int(days.group(1))
            assert re.findall(r"Day (\d+) of (\d+):", p.solution) == [(str(d), str(total)) for d in range(1, total + 1)]
            assert all(int(c) == int(a) for (_, _, _, c), (a, _, _, _) in zip(equations, equations[1:]))


def test_unknown_length_is_a_clear_error():
    with pytest.raises(ValueError, match="length must be one of"):
        task.problems("test", 3, length="huge")
    with pytest.raises(ValueError, match="longer than every bucket"):
        task.bucket_of(401)


def test_wrong_equations_finds_an_arithmetic_slip():
    text = "Ben starts with 44 stickers. 44 - 14 = 29. 29 * 2 = 58. 58 / 2 = 29.\n#### 29"
    assert task.wrong_equations(text) == ["44 - 14 = 29"]
    assert task.wrong_equations("Ben starts with 44 stickers.\n#### 44") == []
