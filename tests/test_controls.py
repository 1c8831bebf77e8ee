"""The controls: every arm trains from the base model with its one change, is scored per bucket, and resumes."""
import json

import pytest

from jacobi_min import controls
from jacobi_min.controls import ControlsConfig
from jacobi_min.train import CLLM, TrainConfig


def test_every_arm_is_the_reference_with_its_one_change():
    cfg = ControlsConfig()
    reference = controls.arm_config(cfg, "λ 10, lr 1e-4 (reference)")
    assert (reference.lam, reference.lr, reference.method) == (10.0, 1e-4, "jacobi-forcing")
    changed = {name: {k for k, v in vars(controls.arm_config(cfg, name)).items() if v != getattr(reference, k)}
               for name in controls.ARMS}
    assert changed["answer-only AR"] == {"ar_on_prompt"}
    assert changed["no short consistency"] == {"consistency_on"} and changed["random schedule offset"] == {"random_offset"}
    assert changed["λ 10, lr 5e-4"] == {"lr"} and changed["300 prompts"] == set()
    assert changed["AR only (λ 3, lr 5e-4)"] == {"consistency_on", "lam", "lr"}
    assert changed["AR only (λ 10, lr 1e-4)"] == {"consistency_on"}
    assert changed["AR only, answer-only (λ 10, lr 1e-4)"] == {"consistency_on", "ar_on_prompt"}
    assert changed["CLLM, 3200 prompts, λ 10"] == {"method", "label_smoothing"}
    assert controls.arm_config(cfg, "no short consistency").consistency_on == ("medium", "long")
    assert controls.ARMS["300 prompts"][0] == 300


def test_controls_score_each_arm_from_step_0_per_bucket_and_a_rerun_reads_them_back(tmp_path, monkeypatch):
    arms = {"reference": (3, controls.REFERENCE), "AR only": (2, {**controls.REFERENCE, "consistency_on": ()}),
            "CLLM": (3, {**controls.REFERENCE, **CLLM})}
    cfg = ControlsConfig(arms=arms, steps=2, batch_size=2, eval_problems=2, problems=1, workers=1,
                         results=tmp_path / "controls.json")
    summary = controls.run(cfg, tmp_path / "work")
    assert list(summary["arms"]) == list(arms)
    starts = [arm["log"][0] for arm in summary["arms"].values()]
    assert all(r["step"] == 0 and r["accuracy"] == starts[0]["accuracy"] for r in starts)  # the base, before training
    for name, arm in summary["arms"].items():
        assert [r["step"] for r in arm["log"]] == [0, 2] and "accuracy" in arm["log"][-1]
        assert set(arm["scores"]) == {"short", "medium", "long"}
        assert all(sum(n for _, n in s["correct"].values()) == 1 for s in arm["scores"].values())
        assert arm["prompts"] == arms[name][0] and arm["config"]["method"] == TrainConfig(**{
            k: tuple(v) if k == "consistency_on" else v for k, v in arm["config"].items()}).method
    assert summary["arms"]["AR only"]["log"][-1]["consistency"] == 0.0
    assert summary["arms"]["CLLM"]["config"]["label_smoothing"] == 0.1
    assert json.loads(cfg.results.read_text()) == summary

    def no_training(*args, **kwargs):
        raise AssertionError("a finished arm was trained again")
    monkeypatch.setattr(controls, "train", no_training)
    assert controls.run(cfg, tmp_path / "work") == summary
