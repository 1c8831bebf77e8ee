"""Every command line reaches the code it names with the arguments it was given.

The long commands (pipeline, bench, recipe, figures) are tested end to end
at tiny sizes in their own test files; here their entry points are replaced by
recorders, so each test checks the wiring: which function runs, with which
configuration. The quick commands (collect, exactness, animate) run for real, and
train-base's training function runs at a tiny size to test its resume.
"""
import argparse
import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from jacobi_min import trajectories
from jacobi_min.model import CHECKPOINTS, load
from jacobi_min.tools import bench, figures, pipeline, recipe, task, tiny
from jacobi_min.tools.commands import OWNERS, main
from jacobi_min.tools.evaluate import prompt_ids


def record(monkeypatch, module, name: str, returns=None) -> list:
    """Replace module.name by a function that records its arguments and returns `returns`."""
    calls = []
    monkeypatch.setattr(module, name, lambda *args, **kwargs: calls.append((args, kwargs)) or returns)
    return calls


def test_each_command_runs_a_function_of_the_module_that_registers_it():
    """The CLI is a table: every module in OWNERS adds its commands, each with its own entry function."""
    names = []
    for module in OWNERS:
        commands = argparse.ArgumentParser().add_subparsers()
        module.add_commands(commands)
        for name, parser in commands.choices.items():
            assert parser.get_default("run").__module__ == module.__name__, name
            names.append(name)
    assert sorted(names) == sorted(["demo", "animate", "generate", "train-base", "collect", "pipeline", "train", "bench",
                                    "eval", "cost-model", "recipe", "exactness", "figures"])


def test_collect_writes_the_trajectories_of_the_first_training_prompts(base, tmp_path):
    model, tokenizer = base
    main(["collect", "--prompts", "2", "--block-size", "4", "--max-new-tokens", "8", "--workers", "1",
          "--out", str(tmp_path / "t.jsonl")])
    ids = [prompt_ids(tokenizer, p) for p in task.problems("train", 2, seed=0)]
    assert trajectories.load(tmp_path / "t.jsonl") == trajectories.collect(model, ids, 4, 8)


def test_exactness_reports_every_decoder_exact_on_the_prompts_it_is_given(base, tmp_path, monkeypatch):
    from jacobi_min.tools import realtasks
    _, tokenizer = base
    problems = task.problems("test", 3, seed=0)
    monkeypatch.setattr(realtasks, "prompts", lambda tok, n_gsm8k, n_humaneval: [
        prompt_ids(tokenizer, p) for p in problems[:n_gsm8k + n_humaneval]])
    out = tmp_path / "exactness.json"
    main(["exactness", "--model", "base", "--prompts", "3", "--block-sizes", "4", "16", "--multiblock-sizes", "8",
          "--recycling-sizes", "4", "--prompt-lookup", "3", "--max-new-tokens", "24", "--out", str(out)])
    report = json.loads(out.read_text())
    assert report["meta"]["model"] == "base" and report["meta"]["max_new_tokens"] == 24
    assert len(report["methods"]) == 5
    assert all(row["exact"] == row["total"] == 3 for row in report["methods"].values())


def test_pipeline_passes_its_options_to_every_training_stage(monkeypatch, tmp_path):
    calls = record(monkeypatch, pipeline, "run", returns={})
    main(["pipeline", "--work", str(tmp_path), "--base", "some/model", "--train-prompts", "7", "--workers", "3",
          "--stage", "cllm", "--train-seed", "4", "--out", str(tmp_path / "ckpt"), "--batch", "8"])
    (cfg, work, stage), _ = calls[0]
    assert (work, stage, cfg.base, cfg.train_prompts, cfg.workers, cfg.batch, cfg.out) == (
        tmp_path, "cllm", "some/model", 7, 3, 8, tmp_path / "ckpt")
    assert [r.config.seed for r in cfg.rounds] == [4, 4, 4]
    assert [(r.config.lam, r.config.lr) for r in cfg.rounds] == [(r.config.lam, r.config.lr) for r in pipeline.ROUNDS]


def test_pipeline_defaults_to_the_shipped_rounds(monkeypatch, tmp_path):
    calls = record(monkeypatch, pipeline, "run", returns={})
    main(["pipeline", "--work", str(tmp_path)])
    assert calls[0][0][0] == pipeline.PipelineConfig()


def test_pipeline_stage_baselines_trains_both_families_once_into_out(monkeypatch, tmp_path):
    """`pipeline --stage baselines`: block diffusion, then the drafter, from the base, each to OUT/<name>, no
    trajectories collected; a rerun in the same work folder reads the finished stages back."""
    monkeypatch.setattr(pipeline, "collect", lambda *args: pytest.fail("the baselines collect no trajectories"))
    diffusion = record(monkeypatch, pipeline, "train_diffusion", returns=[{"step": 1, "loss": 1.0}])
    drafter = record(monkeypatch, pipeline, "train_drafter", returns=[{"step": 1, "loss": 2.0}])
    argv = ["pipeline", "--stage", "baselines", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out")]
    main(argv)
    main(argv)
    assert [args[1] for args, _ in diffusion] == [tmp_path / "out" / "block-diffusion"]
    assert [args[1] for args, _ in drafter] == [tmp_path / "out" / "drafter"]
    model, tokenizer = diffusion[0][0][0]
    assert type(model).__name__ == "Qwen2ForCausalLM" and tokenizer.eos_token == "<|endoftext|>"


def test_bench_builds_its_config_from_the_arguments(monkeypatch, tmp_path, capsys):
    runs = record(monkeypatch, bench, "run", returns=[])
    monkeypatch.setattr(bench, "format_table", lambda rows: "table")
    main(["bench", "--problems", "5", "--lengths", "long", "--block-sizes", "8", "32", "--workers", "1",
          "--out", str(tmp_path / "b.json")])
    (cfg, out), _ = runs[0]
    assert (cfg.problems, cfg.lengths, cfg.block_sizes, cfg.workers, cfg.dtype, out) == (
        5, ["long"], [8, 32], 1, "float32", tmp_path / "b.json")
    assert capsys.readouterr().out.splitlines() == ["table"]


def test_recipe_runs_the_chosen_preset_and_prints_before_and_after(monkeypatch, tmp_path, capsys):
    method = {"tpf": 1.0, "speedup": 1.0}
    summary = {"before": {"methods": {"jacobi": method}, "accuracy": 0.5},
               "after": {"methods": {"jacobi": {"tpf": 2.0, "speedup": 1.5}}, "accuracy": 0.25}}
    calls = record(monkeypatch, recipe, "run", returns=summary)
    main(["recipe", "--preset", "gpu", "--work", str(tmp_path)])
    main(["recipe", "--preset", "gpu", "--work", str(tmp_path), "--dry-run"])
    assert [args for args, _ in calls] == [(recipe.PRESETS["gpu"], tmp_path, recipe.RESULTS),
                                           (recipe.dry_run(recipe.PRESETS["gpu"]), tmp_path, tmp_path / "summary.json")]
    out = capsys.readouterr().out
    assert "TPF 1.00 -> 2.00, speedup 1.00x -> 1.50x" in out and "accuracy 50.0% -> 25.0%" in out


def test_figures_prints_every_figure_it_rebuilt(monkeypatch, capsys):
    record(monkeypatch, figures, "build", returns=[Path("figures/a.png"), Path("figures/b.png")])
    main(["figures"])
    assert capsys.readouterr().out.splitlines() == ["figures/a.png", "figures/b.png"]


SMALL = tiny.BaseConfig(vocab_size=300, hidden_size=32, intermediate_size=64, layers=1, heads=2, kv_heads=1,
                        context=640, train_problems=60, steps=4, tokens_per_step=256, save_every=2, warmup=1)


def test_train_base_resumed_after_an_interruption_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    straight = tiny.train_base(tmp_path / "straight", SMALL)
    draw = tiny.draw_batch
    calls = []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 3:  # after the snapshot at step 2
            raise KeyboardInterrupt
        return draw(*args)

    monkeypatch.setattr(tiny, "draw_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tiny.train_base(tmp_path / "resumed", SMALL)
    assert (tmp_path / "resumed" / "resume.pt").exists()
    monkeypatch.setattr(tiny, "draw_batch", draw)
    resumed = tiny.train_base(tmp_path / "resumed", SMALL)
    assert resumed["parameters"] == straight["parameters"] and not (tmp_path / "resumed" / "resume.pt").exists()
    logs = [[json.loads(line)["loss"] for line in (tmp_path / d / "train_log.jsonl").read_text().splitlines()]
            for d in ("straight", "resumed")]
    assert logs[0] == logs[1] and len(logs[0]) == 4
    weights = [load_file(tmp_path / d / "model.safetensors") for d in ("straight", "resumed")]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_train_base_continues_a_checkpoint_with_its_tokenizer(tmp_path):
    """--init starts from the checkpoint's weights and keeps its tokenizer: at lr 0 nothing moves, at lr > 0 only the weights do."""
    tiny.train_base(tmp_path / "first", SMALL)
    still = replace(SMALL, init=str(tmp_path / "first"), lr=0.0, seed=1)
    tiny.train_base(tmp_path / "still", still)
    tiny.train_base(tmp_path / "moved", replace(still, lr=1e-3))
    weights = {d: load_file(tmp_path / d / "model.safetensors") for d in ("first", "still", "moved")}
    assert all(torch.equal(weights["first"][k], weights["still"][k]) for k in weights["first"])
    assert not all(torch.equal(weights["first"][k], weights["moved"][k]) for k in weights["first"])
    vocabs = {d: json.loads((tmp_path / d / "tokenizer.json").read_text())["model"]["vocab"] for d in weights}
    assert vocabs["first"] == vocabs["still"] == vocabs["moved"]
    with pytest.raises(FileNotFoundError, match="no checkpoint to continue from at .*nowhere"):
        tiny.train_base(tmp_path / "x", replace(SMALL, init=str(tmp_path / "nowhere")))


def test_train_base_trains_the_shipped_bases_two_stages(tmp_path, monkeypatch):
    calls = record(monkeypatch, tiny, "train_base", returns={"parameters": 1})
    main(["train-base", "--out", str(tmp_path)])
    assert [args for args, _ in calls] == [
        (tmp_path / "short-first", tiny.BaseConfig(steps=900, bucket_weights=(1.0, 0.0, 0.0), seed=0)),
        (tmp_path, tiny.BaseConfig(steps=3000, seed=1, init=str(tmp_path / "short-first")))]
    shipped = json.loads((CHECKPOINTS / "base" / "train_config.json").read_text())["config"]
    assert {**asdict(calls[1][0][1]), "init": "", "bucket_weights": list(tiny.BaseConfig.bucket_weights)} == {
        **shipped, "init": ""}
    (tmp_path / "short-first").mkdir()
    (tmp_path / "short-first" / "model.safetensors").write_bytes(b"")  # a finished first stage is kept
    main(["train-base", "--out", str(tmp_path)])
    assert [args[0] for args, _ in calls[2:]] == [tmp_path]


def test_a_question_typed_with_or_without_its_label_gets_the_answer_line():
    """A newcomer types "Question: …?" without the "Answer:" line the models were trained to see."""
    question = "Mia has 45 stickers. Mia gives 17 stickers to Ben. How many stickers does Mia have now?"
    formatted = task.format_prompt(question)
    typed = [question, f"Question: {question}", f" Question:{question}\n"]
    assert [task.as_prompt(text) for text in typed] == [formatted] * 3
    assert task.as_prompt(formatted) == formatted and task.as_prompt(formatted + " Mia") == formatted + " Mia"


def test_animate_writes_one_frame_per_state_of_the_slowest_block(base, tmp_path, capsys):
    from PIL import Image

    from jacobi_min import jacobi_decode
    question = "Mia has 45 stickers. Mia gives 17 stickers to Ben. How many stickers does Mia have now?"
    main(["animate", question, "--models", "base", "jacobi-forcing", "--block-size", "4", "--block", "1",
          "--out", str(tmp_path / "t.gif")])
    states = []
    for name in ("base", "jacobi-forcing"):
        model, tokenizer = load(name)
        ids = tokenizer(task.as_prompt(question))["input_ids"]
        states.append(len(jacobi_decode(model, ids, 4, 8, record=True).blocks[1].states))
    with Image.open(tmp_path / "t.gif") as gif:
        assert gif.n_frames == max(states)
    assert f"base {states[0] - 1}, jacobi-forcing {states[1] - 1}" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="choose --block < "):
        main(["animate", question, "--models", "base", "--block-size", "4", "--block", "30", "--out", str(tmp_path / "u.gif")])


def test_recipe_takes_the_documented_device_flag(monkeypatch, tmp_path):
    """`recipe --preset gpu --device cuda` (the GPU run's documented command) parses; --device overrides the preset's."""
    from jacobi_min.tools import recipe
    from jacobi_min.tools.commands import main
    seen = []
    stage = {"methods": {}, "accuracy": 0.0}
    monkeypatch.setattr(recipe, "run", lambda cfg, work, results: seen.append(cfg) or {"before": stage, "after": stage})
    main(["recipe", "--preset", "gpu", "--device", "cuda", "--work", str(tmp_path)])
    main(["recipe", "--preset", "gpu", "--work", str(tmp_path)])
    main(["recipe", "--preset", "cpu", "--device", "cuda", "--work", str(tmp_path)])
    assert [cfg.device for cfg in seen] == ["cuda", "cuda", "cuda"]
    assert [cfg.train_prompts for cfg in seen[:2]] == [recipe.PRESETS["gpu"].train_prompts] * 2
