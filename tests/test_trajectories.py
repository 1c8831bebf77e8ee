"""Noise levels, schedules and state selection on hand-made trajectories; collection round trip."""
import random

import pytest

from jacobi_min import trajectories
from jacobi_min.train import TrainConfig, noisy_blocks
from jacobi_min.trajectories import first_mismatch, noise_level, pick_state, schedule
from tests.conftest import tiny_model

FIXED = [1, 2, 3, 4]
STATES = [[1, 9, 9, 9], [1, 2, 9, 9], [1, 2, 3, 9], FIXED]  # noise 0.75, 0.5, 0.25, 0


def test_noise_levels():
    assert [first_mismatch(s, FIXED) for s in STATES] == [1, 2, 3, 4]
    assert [noise_level(s, FIXED) for s in STATES] == [0.75, 0.5, 0.25, 0.0]
    assert noise_level([1, 2, 7, 4], FIXED) == 0.5  # a later correct token does not count


def test_pick_state_closest_and_earliest_on_ties():
    assert pick_state(STATES, 0.0) == FIXED
    assert pick_state(STATES, 1.0) == STATES[0]
    assert pick_state(STATES, 0.3) == STATES[2]
    assert pick_state(STATES, 0.375) == STATES[1]  # 0.5 and 0.25 tie: the earlier state wins
    twins = [[1, 9, 9, 9], [1, 8, 8, 8], FIXED]
    assert pick_state(twins, 0.75) is twins[0]


def test_schedules():
    rng = random.Random(0)
    assert schedule(6, 4, "progressive", rng) == pytest.approx([0, 1 / 3, 2 / 3, 1, 0, 1 / 3])
    assert schedule(3, 4, "progressive", rng, offset=2) == pytest.approx([2 / 3, 1, 0])
    assert schedule(5, 4, "reverse", rng) == pytest.approx([1, 2 / 3, 1 / 3, 0, 1])
    draws = schedule(200, 4, "random", rng)
    assert set(round(d, 6) for d in draws) == {0.0, round(1 / 3, 6), round(2 / 3, 6), 1.0}
    with pytest.raises(ValueError, match="unknown schedule"):
        schedule(3, 4, "cosine", rng)


def test_noisy_blocks_follow_the_method():
    trajectory = {"prompt": [5], "blocks": [STATES, STATES, STATES, STATES]}
    cfg = TrainConfig(window=4)
    picks = noisy_blocks(trajectory, cfg, random.Random(3))
    levels = [noise_level(s, FIXED) for s in picks]
    # targets W = 0, 1/3, 2/3, 1 pick the states of noise 0, 0.25, 0.75, 0.75; blocks walk W from an offset
    picked = [0.0, 0.25, 0.75, 0.75]
    assert any(levels == [picked[(o + j) % 4] for j in range(4)] for o in range(4))
    for seed in range(20):  # CLLM: one block noisy, in one of its intermediate states; the others only clean
        cllm = noisy_blocks(trajectory, TrainConfig(method="cllm"), random.Random(seed))
        noisy = [s for s in cllm if s is not None]
        assert len(cllm) == 4 and len(noisy) == 1 and noisy[0] in STATES[:-1]


def test_collect_save_load_round_trip(tmp_path):
    model = tiny_model(vocab=40, eos=[])
    data = trajectories.collect(model, [[5, 6, 7], [8, 9]], block_size=4, max_new_tokens=10, desc="test")
    # 10 tokens at n = 4: blocks of 4, 4, 1 (budget) and the final bonus token
    assert [[len(states[-1]) for states in t["blocks"]] for t in data] == [[4, 4, 1, 1]] * 2
    for t in data:
        for states in t["blocks"]:
            assert noise_level(states[-1], states[-1]) == 0.0
    path = tmp_path / "traj.jsonl"
    trajectories.save(path, data)
    assert trajectories.load(path) == data
