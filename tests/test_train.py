"""Training runs: a few steps on one process and under torchrun with 2 processes (DDP, gloo); saving."""
import json
import math
import os
import random
import socket
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

import jacobi_min
from jacobi_min import train as train_module
from jacobi_min import trajectories
from jacobi_min.model import CHECKPOINTS
from jacobi_min.packing import collate, pack
from jacobi_min.tools import pipeline, task
from jacobi_min.tools.evaluate import HeldOutCheck, prompt_ids, repetition, train_and_check
from jacobi_min.train import (
    TrainConfig,
    draw_examples,
    evaluates_at,
    make_batch,
    noisy_blocks,
    save_checkpoint,
    train,
)
from tests.conftest import generate_greedy

pytestmark = pytest.mark.xdist_group("test_train")  # one worker: the trajectories and the torchrun, made once
ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def trajectory_file(tmp_path_factory):
    model, tokenizer = jacobi_min.load()
    prompts = [tokenizer(p.prompt)["input_ids"] for p in task.problems("train", 6)]
    path = tmp_path_factory.mktemp("traj") / "round1.jsonl"
    trajectories.save(path, trajectories.collect(model, prompts, block_size=8, max_new_tokens=96))
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_repetition_metric():
    assert repetition([1, 2, 3, 4]) == 0.0
    assert repetition([5, 5, 5, 5, 5]) == 1.0
    assert repetition([1, 1, 2, 3, 3]) == 0.5


@pytest.mark.parametrize("method", ["jacobi-forcing", "cllm"])
def test_few_steps_single_process(trajectory_file, method):
    model, tokenizer = jacobi_min.load()
    cfg = TrainConfig(method=method, steps=4, batch_size=2)
    log = train_and_check(model, tokenizer, trajectories.load(trajectory_file), cfg, check=HeldOutCheck(every=4, problems=3))
    assert [r["step"] for r in log] == [0, 1, 2, 3, 4] and all(math.isfinite(r["loss"]) for r in log[1:])
    assert {"accuracy", "tpf", "repetition", "correct"} <= set(log[0]) & set(log[-1])
    assert sum(n for _, n in log[0]["correct"].values()) == 3
    assert all(r["consistency"] >= 0 and r["ar_answer"] >= 0 for r in log[1:])


@pytest.fixture(scope="module")
def ddp_run(trajectory_file, tmp_path_factory):
    """One torchrun with 2 processes (gloo): 3 steps of the `train` command under DDP; the folder it wrote to."""
    out = tmp_path_factory.mktemp("ddp")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={free_port()}",
               str(ROOT / "tests" / "ddp_replicas.py"), str(trajectory_file), str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_ddp_two_processes_log_and_save_on_rank_0(ddp_run):
    log = [json.loads(line) for line in (ddp_run / "ddp" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [0, 1, 2, 3] and "accuracy" in log[0] and "accuracy" in log[-1]
    assert all(math.isfinite(r["loss"]) for r in log[1:])
    assert (ddp_run / "ddp" / "model.safetensors").exists()


def test_ddp_replicas_hold_identical_weights_after_training(ddp_run):
    """Each rank draws its own batches; DDP averages the gradients, so the replicas stay equal."""
    rank0, rank1 = (torch.load(ddp_run / f"rank{r}.pt") for r in (0, 1))
    initial = jacobi_min.load()[0].state_dict()
    assert all(torch.equal(rank0[name], rank1[name]) for name in rank0)
    assert any(not torch.equal(rank0[name], initial[name]) for name in rank0)


def test_save_checkpoint_writes_half_precision_and_leaves_the_model_as_it_was(tmp_path):
    model, tokenizer = jacobi_min.load()
    with torch.no_grad():
        model.model.embed_tokens.weight.add_(1e-4)  # values that float16 cannot hold exactly
    before = {k: v.clone() for k, v in model.state_dict().items()}
    save_checkpoint(model, tokenizer, tmp_path, TrainConfig(), [{"step": 1, "loss": 1.0}])
    assert model.dtype == torch.float32
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    saved, _ = jacobi_min.load(tmp_path)
    assert torch.equal(saved.model.embed_tokens.weight, before["model.embed_tokens.weight"].half().float())
    assert json.loads((tmp_path / "train_config.json").read_text())["config"]["lam"] == TrainConfig().lam


def test_pipeline_runs_end_to_end_on_a_few_prompts_and_resumes(tmp_path, monkeypatch):
    """Three rounds (round 3: two seeds side by side and two continuations, each pair averaged), the
    CLLM baseline under the same two-phase schedule (the default stage); a rerun after an interruption
    resumes after the finished stages (it collects nothing and leaves their files untouched) and ends with
    the same weights; a rerun with other training settings in the same folder is refused instead of
    reusing the finished stages."""
    tiny = TrainConfig(steps=3, batch_size=2)
    late = pipeline.Round(32, replace(tiny, lr=1e-4, lam=30.0), runs=2, right_only=True,
                          polishes={"ar": replace(tiny, steps=2, consistency_on=()), "long": replace(tiny, steps=2)})
    rounds = (pipeline.Round(16, replace(tiny, lr=5e-4)), pipeline.Round(32, replace(tiny, lr=2e-4, lam=20.0)), late)
    cfg = pipeline.PipelineConfig(train_prompts=4, rounds=rounds, check=HeldOutCheck(every=10**9, problems=2),
                                  out=tmp_path / "out")
    first = pipeline.run(cfg, tmp_path / "work", stage="jacobi-forcing")  # "interrupted" after Jacobi Forcing
    weights = jacobi_min.load(cfg.out / "jacobi-forcing")[0].state_dict()
    (tmp_path / "work" / "round2.jsonl").write_text("")  # a finished stage is read back, not redone
    finished = {p: p.stat().st_mtime_ns for p in (tmp_path / "work").iterdir()}
    monkeypatch.setattr(pipeline, "collect", lambda *args: pytest.fail("a finished collection ran again"))
    models = pipeline.run(cfg, tmp_path / "work")  # the default: both checkpoints
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in finished.items())
    rounds = {"round1", "train_round1", "round2", "train_round2"} | {
        f"{prefix}round3{suffix}" for prefix, suffix in
        (("", ""), ("train_", "_s0"), ("train_", "_s1"), ("", "_polish_ar"), ("", "_polish_long"))}
    assert set(models) == {*rounds, "cllm_phase1", "cllm_phase2"}
    assert set(first) == rounds and all(models[k] == v for k, v in first.items())
    again = jacobi_min.load(cfg.out / "jacobi-forcing")[0].state_dict()
    assert all(torch.equal(weights[k], again[k]) for k in weights)
    round1 = trajectories.load(tmp_path / "work" / "round1.jsonl")
    assert len(round1) == 4 and max(len(b[-1]) for t in round1 for b in t["blocks"]) == 16
    for name, rounds_in_log in (("jacobi-forcing", 3), ("cllm", 2)):
        log = [json.loads(line) for line in (cfg.out / name / "train_log.jsonl").read_text().splitlines()]
        assert [r["step"] for r in log] == list(range(4)) + [3 * r + s for r in range(1, rounds_in_log) for s in range(4)]
        assert [r.get("round", 1) for r in log] == [r for r in range(1, rounds_in_log + 1) for _ in range(4)]
        assert all(math.isfinite(r["loss"]) for r in log if r["step"] > 0 and "loss" in r)
        saved = json.loads((cfg.out / name / "train_config.json").read_text())
        assert (saved["config"]["lr"], saved["config"]["lam"]) == ((1e-4, 30.0) if name == "jacobi-forcing" else (5e-4, pipeline.RECIPE["cllm"]["lam"]))
        model, tokenizer = jacobi_min.load(cfg.out / name)
        prompt = tokenizer(task.problems("test", 1)[0].prompt)["input_ids"]
        assert jacobi_min.jacobi_decode(model, prompt, 16, 40).tokens == generate_greedy(model, prompt, 40)
    saved = json.loads((cfg.out / "jacobi-forcing" / "train_config.json").read_text())
    assert set(saved["seconds"]) == rounds and [r["runs"] for r in saved["pipeline"]["rounds"]] == [1, 1, 2]
    cllm = json.loads((cfg.out / "cllm" / "train_config.json").read_text())
    assert cllm["phase1"]["lr"] == cllm["config"]["lr"] == 5e-4 and cllm["phase1"]["method"] == cllm["config"]["method"] == "cllm"
    assert cllm["config"]["label_smoothing"] == pipeline.RECIPE["cllm"]["label_smoothing"]
    with pytest.raises(ValueError, match=r"stage 'train_round1' made with other settings \(round1.config.seed, train_round1.seed differ\)"):
        pipeline.run(pipeline.with_training(cfg, 1), tmp_path / "work", stage="jacobi-forcing")  # would reuse seed 0's


def test_round_3_averages_its_runs_and_keeps_only_right_answers(tmp_path, monkeypatch):
    """Round 3's runs start from the same weights, and the model ends as the mean of theirs (computed
    here from the runs the work folder kept); a trajectory with a wrong answer is dropped, in order."""
    model, tokenizer = jacobi_min.load()
    cfg = pipeline.PipelineConfig(train_prompts=3, workers=1, check=HeldOutCheck(problems=0))
    runs = {"a": TrainConfig(steps=2, batch_size=2, lr=1e-3, seed=0),
            "b": TrainConfig(steps=2, batch_size=2, lr=1e-3, seed=1)}
    problems = task.problems("train", 3, seed=0)
    traj = [{"prompt": prompt_ids(tokenizer, p), "blocks": [[tokenizer(f" #### {p.answer}")["input_ids"] + [tokenizer.eos_token_id]]]}
            for p in problems]
    traj[1]["blocks"][0][-1] = tokenizer(f" #### {problems[1].answer + 1}")["input_ids"]
    assert pipeline.right_answers(traj, problems, tokenizer) == [traj[0], traj[2]]
    start = {k: v.clone() for k, v in model.state_dict().items()}
    work = pipeline.Work(tmp_path)
    pipeline.averaged_runs(model, tokenizer, traj, runs, cfg, work, {})
    trained = [torch.load(tmp_path / f"{name}.pt")["model"] for name in runs]
    assert all(not torch.equal(t["model.norm.weight"], start["model.norm.weight"]) for t in trained)
    assert not torch.equal(trained[0]["model.norm.weight"], trained[1]["model.norm.weight"])
    assert all(torch.equal(model.state_dict()[k], (trained[0][k] + trained[1][k]) / 2) for k in start)
    monkeypatch.setattr(pipeline, "collect", lambda *args: [traj[1]] * 3)
    with pytest.raises(ValueError, match="round 3: none of the 3 answers is right"):
        pipeline.progressive_round(model, tokenizer, cfg, pipeline.Work(tmp_path / "all-wrong"), 3, {})


@pytest.mark.parametrize("argv", [["eval", "--problems", "0"], ["demo", "--problems", "0"],
                                  ["train", "--trajectories", "x", "--out", "y", "--window", "0"],
                                  ["train", "--trajectories", "x", "--out", "y", "--batch-size", "0"],
                                  ["train", "--trajectories", "x", "--out", "y", "--steps", "0"],
                                  ["bench", "--block-sizes", "16", "0"], ["pipeline", "--workers", "0"]])
def test_out_of_range_arguments_are_usage_errors(argv, capsys):
    from jacobi_min.tools.commands import main
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2 and "must be >=" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["train", "--trajectories", "EMPTY", "--out", "OUT"],
                                  ["eval", "--model", "jacobi_forcing", "--problems", "1"],
                                  ["eval", "--model", "./no/such/checkpoint", "--problems", "1"]])
def test_bad_inputs_on_the_command_line_end_with_a_message_not_a_traceback(argv, tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    argv = [{"EMPTY": str(tmp_path / "empty.jsonl"), "OUT": str(tmp_path / "out")}.get(a, a) for a in argv]
    done = subprocess.run([sys.executable, "-m", "jacobi_min", *argv], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.splitlines()[-1].startswith("error: ")
    assert "Traceback" not in done.stderr


def test_training_on_no_trajectories_is_a_clear_error():
    model, tokenizer = jacobi_min.load()
    with pytest.raises(ValueError, match="no trajectories"):
        train(model, tokenizer, [], TrainConfig(steps=1))


def test_a_diverged_loss_stops_training_with_a_clear_error(trajectory_file):
    model, tokenizer = jacobi_min.load()
    with torch.no_grad():
        model.model.norm.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="training diverged"):
        train(model, tokenizer, trajectories.load(trajectory_file), TrainConfig(steps=2, batch_size=2))


def test_interrupted_training_resumes_to_the_same_weights(trajectory_file, tmp_path, monkeypatch):
    from jacobi_min import train as train_module
    data = trajectories.load(trajectory_file)
    cfg = TrainConfig(steps=6, batch_size=2, save_every=2)
    model, tokenizer = jacobi_min.load()
    train(model, tokenizer, data, cfg)
    uninterrupted = model.state_dict()

    model, tokenizer = jacobi_min.load()
    make_batch, calls = train_module.make_batch, []
    def crash_at_step_5(*args):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return make_batch(*args)
    monkeypatch.setattr(train_module, "make_batch", crash_at_step_5)
    with pytest.raises(KeyboardInterrupt):
        train(model, tokenizer, data, cfg, resume=tmp_path / "resume.pt")
    monkeypatch.setattr(train_module, "make_batch", make_batch)
    model, tokenizer = jacobi_min.load()  # a fresh process: only the snapshot of step 4 survives
    log = train(model, tokenizer, data, cfg, resume=tmp_path / "resume.pt")
    assert [r["step"] for r in log] == [1, 2, 3, 4, 5, 6]  # no held-out problems: no step-0 scores
    assert all(torch.equal(uninterrupted[k], v) for k, v in model.state_dict().items())
    assert not (tmp_path / "resume.pt").exists()


def test_loss_falls_and_parameters_change_on_a_fixed_batch(trajectory_file):
    """One trajectory, progressive schedule without offset: every step sees the same batch."""
    model, tokenizer = jacobi_min.load()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    log = train(model, tokenizer, trajectories.load(trajectory_file)[:1],
                TrainConfig(steps=30, batch_size=2, lr=1e-3, warmup_frac=0.0, random_offset=False))
    assert log[-1]["loss"] < 0.5 * log[0]["loss"]
    assert sum(not torch.equal(before[k], v) for k, v in model.state_dict().items()) == len(before)


@pytest.mark.parametrize("eps", [1e-8, 1e-2])
def test_adams_epsilon_bounds_the_first_step_of_a_weight_with_a_small_gradient(trajectory_file, eps):
    """Adam's first step is lr·g/(|g| + ε) per weight: about lr whatever the gradient when ε is
    tiny (torch's 1e-8), and far less than lr for the base's typical gradients (~5e-4) at ε = 1e-2."""
    model, tokenizer = jacobi_min.load()
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    lr = 1e-3
    train(model, tokenizer, trajectories.load(trajectory_file), TrainConfig(steps=1, lr=lr, adam_eps=eps),
          progress=False)
    moved = (torch.cat([p.detach().flatten() for p in model.parameters()]) - before).abs()
    assert moved.max() <= lr * (1 + 1e-3)  # float32 rounding of w + Δ at |w| ≈ 1
    if eps == 1e-8:
        assert moved.median() > 0.9 * lr
    else:
        assert moved.median() < lr / 10


# The recipe as commit 131e39f defined it (RECIPE, LATE, POLISH, POLISHES and ROUNDS in tools/pipeline.py, CLLM in
# train.py, PipelineConfig.cllm_lam; rounds 4 and 5 are gone since): its TrainConfig defaults, then what each training set on top of them. Its
# defaults' weight_decay 0.0 is now fixed in `train`, and its eval_* fields moved to evaluate.HeldOutCheck.
BEFORE_DEFAULTS = {"method": "jacobi-forcing", "schedule": "progressive", "window": 16, "random_offset": False,
                   "steps": 600, "batch_size": 8, "lr": 3e-4, "warmup_frac": 0.03, "adam_eps": 1e-8, "lam": 10.0,
                   "save_every": 200, "seed": 0, "autocast": None, "freeze_embeddings": False, "ar_on_prompt": True,
                   "label_smoothing": 0.0, "consistency_on": ("short", "medium", "long"), "clean_context": False,
                   "draw_by_blocks": False, "undivided_consistency": False}
BEFORE = {
    "round 1": {"random_offset": True, "steps": 1600, "lr": 5e-4, "adam_eps": 1e-4},
    "round 2": {"random_offset": True, "steps": 800, "adam_eps": 1e-4},
    "round 3": {"random_offset": True, "steps": 800, "adam_eps": 1e-4, "lam": 30.0, "undivided_consistency": True},
    "polish ar": {"steps": 50, "lr": 3e-5, "adam_eps": 1e-4, "ar_on_prompt": False, "consistency_on": ()},
    "polish long": {"random_offset": True, "steps": 50, "lr": 3e-5, "adam_eps": 1e-4, "lam": 30.0, "ar_on_prompt": False,
                    "consistency_on": ("long",), "undivided_consistency": True},
    "cllm phase 1": {"method": "cllm", "random_offset": True, "steps": 1600, "lr": 5e-4, "adam_eps": 1e-4, "lam": 30.0,
                     "label_smoothing": 0.1},
    "cllm phase 2": {"method": "cllm", "random_offset": True, "steps": 800, "lr": 5e-4, "adam_eps": 1e-4, "lam": 30.0,
                     "label_smoothing": 0.1, "seed": 1},
}


def before(name: str, **changes) -> TrainConfig:
    return TrainConfig(**{**BEFORE_DEFAULTS, **BEFORE[name], **changes})


def test_round_1_is_trainconfigs_defaults_and_the_table_builds_the_recipe_as_before():
    """The same rounds with the same settings as before the table: n 16, 32, 32 over 4,000 prompts; in round 3 two
    averaged runs on right answers and the two polishes; CLLM's phases. The AR-only polish keeps
    round 1's random offset where it had none: it packs no noisy block, so the offset is never read
    (`test_an_ar_only_run_never_reads_the_schedule_offset`)."""
    assert TrainConfig() == before("round 1")
    cfg = pipeline.PipelineConfig(rounds=pipeline.ROUNDS)
    assert pipeline.PipelineConfig().rounds == pipeline.ROUNDS
    assert cfg.train_prompts == 4000 and cfg.check == HeldOutCheck(every=200, problems=40, block_size=16)
    assert [(r.block, r.runs, r.right_only) for r in cfg.rounds] == [(16, 1, False), (32, 1, False), (32, 2, True)]
    assert [r.config for r in cfg.rounds] == [before("round 1"), before("round 2"), before("round 3")]
    polishes = {"ar": before("polish ar", random_offset=True), "long": before("polish long")}
    assert [r.polishes for r in cfg.rounds] == [{}, {}, polishes]
    assert pipeline.cllm_phases(cfg) == (before("cllm phase 1"), before("cllm phase 2"))


def test_an_ar_only_run_never_reads_the_schedule_offset():
    group = [hand_made(3, 4), hand_made(11, 16, first=5000)]
    batches = [make_batch([group], TrainConfig(batch_size=4, consistency_on=(), random_offset=offset), random.Random(0),
                          eos=set(), pad_id=0) for offset in (False, True)]
    assert batches[0].keys() == batches[1].keys() and all(torch.equal(batches[0][k], batches[1][k]) for k in batches[0])


def test_the_shipped_checkpoints_record_the_recipe_table():
    """Their train_config.json (historical records, written before the table) hold its settings: round 1, round 2,
    round 3's runs (the last config) and polishes; CLLM's two phases. weight_decay 0 and the eval_* fields they
    also record are `train`'s fixed AdamW and evaluate.HeldOutCheck's defaults."""
    shipped = json.loads((CHECKPOINTS / "jacobi-forcing" / "train_config.json").read_text())
    cllm = json.loads((CHECKPOINTS / "cllm" / "train_config.json").read_text())
    rounds, (phase1, phase2) = pipeline.ROUNDS, pipeline.cllm_phases(pipeline.PipelineConfig())
    recorded = [(shipped["round1"], rounds[0].config), (shipped["round2"], rounds[1].config),
                (shipped["config"], rounds[2].config), (shipped["polishes"]["long"], rounds[2].polishes["long"]),
                (shipped["polishes"]["ar"], replace(rounds[2].polishes["ar"], random_offset=False)),
                (cllm["phase1"], phase1), (cllm["config"], phase2)]
    check = {f"eval_{k}": v for k, v in asdict(HeldOutCheck()).items()} | {"weight_decay": 0.0}
    for record, config in recorded:
        settings = json.loads(json.dumps(asdict(config) | check))
        assert record == {k: settings[k] for k in record}


def test_a_training_seed_changes_every_training_stage_and_nothing_else():
    """The seed reaches every round and continuation."""
    cfg = pipeline.PipelineConfig()
    seeded = pipeline.with_training(cfg, 2)
    for old, new in zip(cfg.rounds, seeded.rounds):
        assert new == replace(old, config=replace(old.config, seed=2),
                              polishes={k: replace(p, seed=2) for k, p in old.polishes.items()})
    assert replace(seeded, rounds=cfg.rounds) == cfg


def hand_made(blocks: int, n: int, first: int = 10) -> dict:
    """A trajectory of `blocks` blocks of n tokens: each passes through a draft wrong from position 1,
    a state wrong from position n - 2, and its fixed point."""
    fixed = [[first + 100 * j + i for i in range(n)] for j in range(blocks)]
    return {"prompt": [1, 2, 3],
            "blocks": [[f[:1] + [9] * (n - 1), f[:n - 2] + [9, 9], f] for f in fixed]}


SHORT, LONG = hand_made(2, 4), hand_made(11, 16, first=5000)  # 8 tokens: short; 176 tokens: long


def test_buckets_outside_consistency_on_train_on_the_ar_loss_alone():
    """AR only (no bucket) and one bucket off: those examples lose their noisy blocks and nothing else."""
    for consistency_on, noisy_short, noisy_long in [((), False, False), (("long",), False, True),
                                                    (("short", "long"), True, True)]:
        cfg = TrainConfig(batch_size=2, window=2, random_offset=False, consistency_on=consistency_on)  # W = 0, 1: block 1 gets its draft
        for group, noisy in (([SHORT], noisy_short), ([LONG], noisy_long)):
            batch = make_batch([group], cfg, random.Random(0), eos=set(), pad_id=0)
            clean_only = collate([pack(group[0]["prompt"], [None] * len(group[0]["blocks"]),
                                       [s[-1] for s in group[0]["blocks"]])] * 2, pad_id=0)
            assert (len(batch["weight"]) > 0) == noisy
            if not noisy:
                assert all(torch.equal(batch[k], clean_only[k]) for k in ("input_ids", "labels", "position_ids"))


def test_cllm_draws_one_example_per_block_and_jacobi_forcing_one_per_prompt():
    """CLLM: (trajectory, block) uniform over all blocks, so a 3-block answer weighs 3 times a
    1-block one; Jacobi Forcing: the trajectory uniform."""
    one, three = hand_made(1, 4), hand_made(3, 4, first=1000)
    rng = random.Random(0)
    cllm = [(id(t), j) for _ in range(500) for t, j in draw_examples([[one, three]], TrainConfig(method="cllm"), rng)]
    counts = {key: cllm.count(key) for key in set(cllm)}
    assert sorted(counts) == sorted([(id(one), 0)] + [(id(three), j) for j in range(3)])
    assert all(850 <= c <= 1150 for c in counts.values())  # 4000 draws over 4 (prompt, block) pairs
    picks = [id(t) for _ in range(500) for t, j in draw_examples([[one, three]], TrainConfig(), rng)]
    assert 1800 <= picks.count(id(one)) <= 2200 and all(j is None for _, j in draw_examples([[one]], TrainConfig(), rng))


def test_draw_by_blocks_picks_the_prompts_cllm_picks_with_one_example_each():
    """Same seed, same draws: CLLM's prompts (∝ their blocks), but no block chosen (Jacobi Forcing packs all of them)."""
    groups = [[hand_made(1, 4), hand_made(3, 4, first=1000)], [hand_made(11, 16, first=5000)]]
    for seed in range(20):
        cllm = draw_examples(groups, TrainConfig(method="cllm"), random.Random(seed))
        by_blocks = draw_examples(groups, TrainConfig(draw_by_blocks=True), random.Random(seed))
        assert [id(t) for t, _ in by_blocks] == [id(t) for t, _ in cllm] and all(j is None for _, j in by_blocks)


def test_clean_context_changes_only_the_mask_to_cllms():
    """Same draws, noisy states and consistency pairs; only the mask differs, and it is the clean-context one
    (which the packing tests prove equal to one plain forward per noisy block after the clean blocks before it)."""
    group = [hand_made(3, 4), hand_made(2, 4, first=1000)]
    noisy = make_batch([group], TrainConfig(batch_size=3, random_offset=True), random.Random(4), eos=set(), pad_id=0)
    clean = make_batch([group], TrainConfig(batch_size=3, random_offset=True, clean_context=True), random.Random(4),
                       eos=set(), pad_id=0)
    assert all(torch.equal(noisy[k], clean[k]) for k in noisy if k != "attention_mask")
    assert not torch.equal(noisy["attention_mask"], clean["attention_mask"])
    rng = random.Random(4)
    examples = [pack(t["prompt"], noisy_blocks(t, TrainConfig(random_offset=True), rng), [s[-1] for s in t["blocks"]])
                for t, _ in draw_examples([group], TrainConfig(batch_size=3), rng)]
    assert torch.equal(clean["attention_mask"], collate(examples, pad_id=0, mask="clean")["attention_mask"])


def test_undivided_consistency_multiplies_each_examples_weights_by_its_blocks_and_changes_nothing_else():
    group = [hand_made(3, 4), hand_made(2, 4, first=1000)]
    cfg = TrainConfig(batch_size=3, random_offset=True)
    official = make_batch([group], cfg, random.Random(4), eos=set(), pad_id=0)
    undivided = make_batch([group], replace(cfg, undivided_consistency=True), random.Random(4), eos=set(), pad_id=0)
    assert all(torch.equal(official[k], undivided[k]) for k in official if k != "weight")
    blocks = (official["input_ids"] == 0).logical_not().sum(1).tolist()  # 3 + 2·4·T tokens: T from the length
    per_row = torch.tensor([(n - 3) // 8 for n in blocks], dtype=torch.float)
    torch.testing.assert_close(undivided["weight"], official["weight"] * per_row[official["rows"]])


@pytest.mark.parametrize("method, option", [("cllm", "clean_context"), ("cllm", "draw_by_blocks"),
                                            ("cllm", "undivided_consistency")])
def test_an_option_the_method_already_fixes_is_a_clear_error(trajectory_file, method, option):
    model, tokenizer = jacobi_min.load()
    with pytest.raises(ValueError, match=option.replace("_", "-")):
        train(model, tokenizer, trajectories.load(trajectory_file),
              TrainConfig(method=method, steps=1, **{option: True}))


def test_a_cllm_example_is_one_noisy_block_after_its_clean_prefix_without_the_last_position():
    """Hand-made: block 1 of 3 (n = 4; tokens 110..113) in the state wrong from position 1 or 2; the consistency positions
    run from that mismatch to n - 2 (CLLM drops the last); the mask is the clean-context one."""
    t = hand_made(3, 4)
    for seed in range(10):
        rng = random.Random(seed)
        noisy = noisy_blocks(t, TrainConfig(method="cllm"), rng, block=1)
        assert noisy[0] is None and noisy[2] is None and noisy[1] in t["blocks"][1][:-1]
        packed = pack(t["prompt"], noisy, [s[-1] for s in t["blocks"]], drop_last=True)
        first = 1 if noisy[1] == t["blocks"][1][0] else 2
        assert packed.pairs == [(list(range(3 + 4 + first, 3 + 4 + 3)), list(range(3 + 8 + first, 3 + 8 + 3)))]
    batch = make_batch([[t]], TrainConfig(method="cllm", batch_size=1), random.Random(1), eos=set(), pad_id=0)
    kinds = batch["attention_mask"][0, 0] == 0
    noisy_rows = (batch["input_ids"][0] == 9).nonzero().flatten()
    start = int(noisy_rows.min()) - 1  # the noisy block's first token (its y0 is right)
    assert kinds[start, :start].all()  # it sees the prompt and every clean block before it


def test_evaluation_steps_are_zero_early_every_check_every_and_the_last():
    assert [s for s in range(451) if evaluates_at(s, 450, 200)] == [0, 50, 100, 200, 400, 450]
    assert [s for s in range(451) if evaluates_at(s, 450, None)] == [0, 50, 100, 450]


def test_the_train_command_passes_every_option_to_the_config():
    from jacobi_min.tools.commands import build_parser
    from jacobi_min.tools.pipeline import settings, train_config
    args = build_parser().parse_args(["train", "--trajectories", "t", "--out", "o", "--method", "cllm", "--lam", "7",
                                      "--label-smoothing", "0.1", "--answer-only-ar", "--consistency-on", "long",
                                      "--seed", "3", "--lr", "1e-4", "--eval-every", "50", "--adam-eps", "1e-8",
                                      "--no-random-offset", "--eval-problems", "5", "--eval-block-size", "8"])
    assert train_config(args) == TrainConfig(method="cllm", lam=7.0, label_smoothing=0.1, ar_on_prompt=False,
                                             consistency_on=("long",), seed=3, lr=1e-4, adam_eps=1e-8,
                                             random_offset=False)
    assert settings(HeldOutCheck, args) == HeldOutCheck(every=50, problems=5, block_size=8)
    plain = build_parser().parse_args(["train", "--trajectories", "t", "--out", "o"])
    assert (train_config(plain), settings(HeldOutCheck, plain)) == (TrainConfig(), HeldOutCheck())  # round 1
    ar_only = build_parser().parse_args(["train", "--trajectories", "t", "--out", "o", "--ar-only", "--random-offset"])
    assert train_config(ar_only) == TrainConfig(consistency_on=())  # --random-offset: the default, still accepted
    cllm_parts = build_parser().parse_args(["train", "--trajectories", "t", "--out", "o", "--clean-context",
                                            "--draw-by-blocks", "--undivided-consistency"])
    assert train_config(cllm_parts) == TrainConfig(clean_context=True, draw_by_blocks=True, undivided_consistency=True)


def test_the_train_command_trains_on_the_first_limit_trajectories(trajectory_file, tmp_path, monkeypatch):
    from jacobi_min.tools.commands import main
    seen = []
    from jacobi_min.tools import evaluate
    monkeypatch.setattr(evaluate, "train", lambda model, tokenizer, data, cfg, out, resume, check, check_every:
                        seen.append((data, cfg)))
    main(["train", "--trajectories", str(trajectory_file), "--out", str(tmp_path / "o"), "--limit", "2", "--lam", "5"])
    assert seen[0][0] == trajectories.load(trajectory_file)[:2] and seen[0][1].lam == 5.0


def test_an_unknown_method_is_a_clear_error(trajectory_file):
    model, tokenizer = jacobi_min.load()
    with pytest.raises(ValueError, match="unknown method"):
        train(model, tokenizer, trajectories.load(trajectory_file), TrainConfig(method="clm", steps=1))


@pytest.mark.parametrize("method, mask", [("jacobi-forcing", "noisy"), ("cllm", "clean")])
def test_each_method_packs_with_its_own_mask(method, mask, monkeypatch):
    """Jacobi Forcing's noisy blocks see the earlier noisy blocks (noisy-context mask); CLLM's see the clean ones."""
    masks = []

    def spy(packed, pad_id, mask, **options):
        masks.append(mask)
        return collate(packed, pad_id, mask=mask, **options)

    monkeypatch.setattr(train_module, "collate", spy)
    make_batch([[hand_made(3, 4)]], TrainConfig(method=method, batch_size=2), random.Random(0), eos=set(), pad_id=0)
    assert masks == [mask]


def test_bfloat16_autocast_runs_the_forward_in_bfloat16_and_keeps_float32_weights(trajectory_file):
    traj = trajectories.load(trajectory_file)[:1]
    losses, dtypes = {}, []
    for autocast in (None, "bfloat16"):
        model, tokenizer = jacobi_min.load()
        hook = model.lm_head.register_forward_hook(lambda module, args, out: dtypes.append(out.dtype))
        log = train(model, tokenizer, traj, TrainConfig(steps=8, batch_size=2, lr=1e-3, warmup_frac=0.0, autocast=autocast),
                    progress=False)
        hook.remove()
        losses[autocast] = [r["loss"] for r in log]
        assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())
    assert dtypes == [torch.float32] * 8 + [torch.bfloat16] * 8
    first_fp32, first_bf16 = losses[None][0], losses["bfloat16"][0]
    assert first_bf16 != first_fp32 and abs(first_bf16 - first_fp32) < 0.05 * first_fp32  # the same loss, rounded
    assert losses["bfloat16"][-1] < losses["bfloat16"][0]
