"""Functions hand back what they were given: the model's train / eval mode and torch's global RNG."""
import pytest
import torch

import jacobi_min
from jacobi_min.tools import task
from jacobi_min.tools.evaluate import evaluate
from jacobi_min.train import TrainConfig, train

TRAJECTORY = {"prompt": [1, 2, 3], "blocks": [[[10, 9, 9, 9], [10, 11, 12, 13]]]}  # one block: a draft, its fixed point


def modes(model) -> list[bool]:
    return [module.training for module in model.modules()]


@pytest.mark.parametrize("training", [False, True])
def test_evaluate_hands_back_the_mode_and_the_rng_it_was_given(training):
    model, tokenizer = jacobi_min.load()
    model.train(training)
    rng, threads = torch.get_rng_state(), torch.get_num_threads()
    evaluate(model, tokenizer, task.problems("test", 1, seed=1), block_size=4, max_new_tokens=8, progress=False)
    assert modes(model) == [training] * len(modes(model))
    assert torch.equal(torch.get_rng_state(), rng) and torch.get_num_threads() == threads


@pytest.mark.parametrize("training", [False, True])
def test_train_hands_back_the_mode_and_the_rng_it_was_given(training):
    model, tokenizer = jacobi_min.load()
    model.train(training)
    model.lm_head.train(not training)  # a mixed model: every module gets its own mode back
    torch.manual_seed(1)  # not the run's seed (0), so a run that leaves the RNG seeded shows
    before, rng = modes(model), torch.get_rng_state()
    train(model, tokenizer, [TRAJECTORY], TrainConfig(steps=1, batch_size=1, eval_problems=0), progress=False)
    assert modes(model) == before
    assert torch.equal(torch.get_rng_state(), rng)
