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
    train(model, tokenizer, [TRAJECTORY], TrainConfig(steps=1, batch_size=1), progress=False)
    assert modes(model) == before
    assert torch.equal(torch.get_rng_state(), rng)


def test_the_timed_tools_hand_back_the_thread_count(monkeypatch, tmp_path):
    """bench and the batched benchmark measure L(k) on one thread per worker, then restore the caller's count."""
    from jacobi_min.tools import bench, throughput
    for module in (bench, throughput):
        monkeypatch.setattr(module, "pmap", lambda fn, items, workers, desc: [])  # no buckets: only L(k) runs
    torch.set_num_threads(2)
    try:
        bench.run(bench.BenchConfig(lengths=[], cost_ks=[1], workers=2), out=None)
        assert torch.get_num_threads() == 2
        throughput.run(throughput.ThroughputConfig(lengths=[], cost_ks=[1], workers=2), out=None)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


def test_training_the_base_hands_back_the_rng(tmp_path):
    from jacobi_min.tools.tiny import BaseConfig, train_base
    torch.manual_seed(1)
    rng = torch.get_rng_state()
    cfg = BaseConfig(vocab_size=300, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1, context=128,
                     train_problems=40, steps=1, tokens_per_step=256, warmup=1)
    train_base(tmp_path / "base", cfg)
    assert torch.equal(torch.get_rng_state(), rng)
