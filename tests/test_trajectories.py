"""Noise levels, schedules and state selection on hand-made trajectories; collection (greedy fixed points, any
number of workers), the file round trip and its errors."""
import random

import pytest

from jacobi_min import trajectories
from jacobi_min.train import TrainConfig, noisy_blocks
from jacobi_min.trajectories import first_mismatch, noise_level, pick_state, schedule
from tests.conftest import generate_greedy, tiny_model

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


def test_progressive_levels_are_block_index_mod_w_on_a_long_trajectory():
    """Ten blocks with w = 4: t_j = W[j mod 4] from block 0 on, whatever the seed (no offset)."""
    fixed = list(range(1, 13))
    states = [fixed[:k] + [0] * (12 - k) for k in (0, 3, 6, 9)] + [fixed]  # noise 1, 0.75, 0.5, 0.25, 0
    trajectory = {"prompt": [5], "blocks": [states] * 10}
    expected = [[0.0, 0.25, 0.75, 1.0][j % 4] for j in range(10)]  # closest to W = 0, 1/3, 2/3, 1
    for seed in range(5):
        picks = noisy_blocks(trajectory, TrainConfig(window=4, random_offset=False), random.Random(seed))
        assert [noise_level(s, fixed) for s in picks] == expected


def test_noisy_blocks_follow_the_method():
    trajectory = {"prompt": [5], "blocks": [STATES, STATES, STATES, STATES]}
    picked = [0.0, 0.25, 0.75, 0.75]  # W = 0, 1/3, 2/3, 1 picks the states of these noise levels
    offsets = set()  # random_offset: the schedule rotated by an offset drawn per example, every offset in turn
    for seed in range(40):
        levels = [noise_level(s, FIXED) for s in noisy_blocks(trajectory, TrainConfig(window=4, random_offset=True),
                                                              random.Random(seed))]
        rotations = [o for o in range(4) if levels == [picked[(o + j) % 4] for j in range(4)]]
        assert len(rotations) == 1
        offsets.add(rotations[0])
    assert offsets == {0, 1, 2, 3}
    for seed in range(20):  # CLLM: its example's block noisy, in one of its intermediate states; the others only clean
        cllm = noisy_blocks(trajectory, TrainConfig(method="cllm"), random.Random(seed), block=seed % 4)
        noisy = [s for s in cllm if s is not None]
        assert len(cllm) == 4 and len(noisy) == 1 and noisy[0] in STATES[:-1]


def test_collect_records_greedy_fixed_points_the_same_in_workers(tmp_path):
    model = tiny_model(vocab=40, eos=[])
    prompts = [[5, 6, 7], [8, 9], [3], [7, 7, 2, 9]]
    data = trajectories.collect(model, prompts, block_size=4, max_new_tokens=10, desc="test")
    # 10 tokens at n = 4: blocks of 4, 4, 1 (budget) and the final bonus token
    assert [[len(states[-1]) for states in t["blocks"]] for t in data] == [[4, 4, 1, 1]] * 4
    for prompt, t in zip(prompts, data):
        assert t["prompt"] == prompt
        assert [token for states in t["blocks"] for token in states[-1]] == generate_greedy(model, prompt, 10)
    assert trajectories.collect(model, prompts, 4, 10, desc="test", workers=2) == data
    path = tmp_path / "traj.jsonl"
    trajectories.save(path, data)
    assert trajectories.load(path) == data


@pytest.mark.parametrize("bad, message", [('{"prompt": [1], "blocks": [[[2, 3]]', "line 2: not a JSON trajectory"),
                                          ('{"prompt": [1]}', "line 2: a trajectory needs 'prompt' and 'blocks'")])
def test_a_malformed_trajectory_line_is_named(tmp_path, bad, message):
    path = tmp_path / "traj.jsonl"
    path.write_text('{"prompt": [1], "blocks": [[[2, 3], [2, 3]]]}\n' + bad + "\n")
    with pytest.raises(ValueError, match=f"traj.jsonl, {message}"):
        trajectories.load(path)
