"""The benchmark runs end to end in a tiny configuration; figures rebuild from results files."""
import json
import os

import pytest
import torch

import jacobi_min
from jacobi_min.tools import bench, figures, task, throughput, timing
from jacobi_min.baselines.drafter import ForwardCounter
from jacobi_min.jacobi import DecodeResult
from tests.conftest import generate_greedy

pytestmark = pytest.mark.xdist_group("test_bench")  # one worker: the tiny benchmark run
LOSSLESS = {"AR", "prompt lookup", "Jacobi (base)", "CLLM", "CLLM + MR", "Jacobi Forcing", "Jacobi Forcing + MR",
            "draft model, k = 4"}
METHODS = LOSSLESS | {"block diffusion, τ = 0.9"}
FAMILIES = dict(thresholds=[0.9], draft_tokens=[4])  # one point of each family's grid


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("results") / "benchmark.json"
    cfg = bench.BenchConfig(problems=1, block_sizes=[16], chunks=1, cost_ks=[1, 4, 16], **FAMILIES)
    bench.run(cfg, out)
    return out


def test_results_file_schema(tiny_results):
    results = json.loads(tiny_results.read_text())
    assert set(results) == {"meta", "buckets", "cost_model"}
    assert {"device", "dtype", "threads", "machine", "prefill"} <= set(results["meta"])
    assert results["meta"]["machine"] == timing.machine()
    assert {"torch", "transformers"} <= set(results["meta"]["machine"])
    assert list(results["buckets"]) == list(task.BUCKETS)
    assert len(results["cost_model"]["k"]) == len(results["cost_model"]["latency_s"]) == 3
    for length, bucket in results["buckets"].items():
        lo, hi = task.BUCKETS[length]
        assert lo <= bucket["answer_tokens"] <= hi
        assert {r["method"] for r in bucket["methods"]} == METHODS
        assert sorted(r["block_size"] for r in bucket["methods"] if r["method"] == "Jacobi Forcing") == [8, 16, 32]
        for r in bucket["methods"]:
            assert {"method", "model", "block_size", "tpf", "accuracy", "tps_median", "tps_range", "speedup_median",
                    "speedup_range", "speedup_with_prefill_median", "predicted_speedup", "tokens", "forwards",
                    "accepted_histogram"} <= set(r)
            assert r["tps_range"][0] <= r["tps_median"] <= r["tps_range"][1]
            if r["method"] in LOSSLESS:  # its own model's greedy AR output (the drafter's: the base's)
                assert r["identical_to_model_ar"] == 1
            else:  # block diffusion, held to the base's AR output
                assert r["model"] == "block-diffusion" and 0 <= r["identical_to_model_ar"] <= 1
        ar = bucket["methods"][0]
        assert ar["method"] == "AR" and ar["tpf"] == 1.0 and ar["speedup_median"] == 1.0
        assert ar["predicted_speedup"] == pytest.approx(1.0)
        for r in bucket["methods"]:  # accuracy is the model's: every decoder reproduces its greedy output
            same_model = [m["accuracy"] for m in bucket["methods"] if m["model"] == r["model"] and m["method"] in LOSSLESS]
            assert r["method"] not in LOSSLESS or same_model == [r["accuracy"]] * len(same_model)
    assert len(bench.format_table(results).splitlines()) == sum(2 + len(b["methods"]) for b in results["buckets"].values())


def test_bench_counts_a_decoder_that_leaves_its_models_ar_output(monkeypatch, tmp_path):
    """One decoder of one trained model made inexact (its first method, which an earlier version took as the
    model's reference): the results file says so for that method alone."""
    real = bench.methods

    def one_inexact(models, cfg):
        rows = real(models, cfg)
        for row in rows:
            if row["method"] == "CLLM":
                row["run"] = lambda ids, run=row["run"]: DecodeResult(run(ids).tokens[:-1], [1])
        return rows

    monkeypatch.setattr(bench, "methods", one_inexact)
    cfg = bench.BenchConfig(problems=2, lengths=["short"], block_sizes=[4], chunks=1, cost_ks=[1, 2], workers=1,
                            thresholds=[], draft_tokens=[4])
    rows = bench.run(cfg, tmp_path / "benchmark.json")["buckets"]["short"]["methods"]
    assert {r["method"]: r["identical_to_model_ar"] for r in rows} == {m: 0 if m == "CLLM" else 2 for m in LOSSLESS}


def test_bench_decoders_equal_generate_on_every_model():
    """Every lossless method of the benchmark (Jacobi's, prompt lookup, the base with its drafter at every k)
    reproduces `generate` of its model, on held-out prompts of every bucket; block diffusion is not lossless."""
    models = {name: jacobi_min.load(name)[0] for name in bench.MODELS}
    tokenizer = jacobi_min.load()[1]
    models["counter"] = {"jacobi-forcing": ForwardCounter(models["jacobi-forcing"])}
    rows = [r for r in bench.methods(models, bench.BenchConfig(block_sizes=[16])) if r["model"] != "block-diffusion"]
    assert sum(r["method"].startswith("draft model") for r in rows) == 3
    for length in task.BUCKETS:
        ids = tokenizer(task.problems("test", 1, seed=7, length=length)[0].prompt)["input_ids"]
        expected = {name: generate_greedy(models[name], ids, task.MAX_ANSWER_TOKENS) for name in ("base", "cllm", "jacobi-forcing")}
        for row in rows:
            assert row["run"](ids).tokens == expected[row["model"]], (length, row["method"])


def test_figures_rebuild_from_results_only(tiny_results, tmp_path):
    results = tiny_results.parent
    row = {"exact": 2, "total": 2, "first_divergence": [None, None], "tpf": [1.02, 1.06], "seconds": [3.0, 4.0]}
    report = {"methods": {"jacobi n=4": row, "prompt lookup": row}, "reference_seconds": [2.0, 3.0],
              "meta": {"model": "qwen", "dtype": "torch.float32", "max_new_tokens": 8}}
    (results / "qwen_exactness_float32.json").write_text(json.dumps(report))
    costs = {"k": [1, 2, 4], "latency_s": [0.1, 0.12, 0.2], "context": 8}
    cost_file = results / "qwen_cost_model_float32.json"
    cost_file.write_text(json.dumps(costs))
    stage = lambda tpf: {"accuracy": 0.5, "finished": 1, "methods": {"jacobi n=16": {"tpf": tpf, "speedup": 0.5 * tpf}}}
    recipe = {"settings": {"eval_prompts": 2, "max_new_tokens": 8, "block_size": 16, "train": {"lam": 10.0}},
              "trajectories": 3, "log": [{"step": s, "loss": 3.0 / s, "ar": 0.1 / s, "consistency": 2.0 / s} for s in range(1, 5)], "before": stage(1.1), "after": stage(1.6),
              "seen": {"before": [1.1, 1.0], "after": [2.0, 1.5]}}
    (results / "qwen_jacobi_forcing.json").write_text(json.dumps(recipe))
    write_training_logs(tmp_path / "checkpoints")
    figures.write_training_summary(tmp_path / "checkpoints", results / "training_curves.json")
    out = tmp_path / "figures"
    out.mkdir()
    written = figures.build(results, out)
    names = {p.name for p in written}
    assert names == {"speedup_vs_answer_length.png", "tpf_vs_answer_length.png", "accuracy_vs_speedup.png", "accuracy_vs_tpf.png",
                     "acceptance_histogram.png", "cost_model.png", "training_curves.png",
                     "real_qwen.png", "qwen_jacobi_forcing.png"}
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
    assert figures.stale(results, out) == []
    cost_file.write_text(json.dumps({**costs, "context": 9}))
    assert figures.stale(results, out) == ["real_qwen.png"]
    figures.build(results, out)
    assert figures.stale(results, out) == []


def write_training_logs(folder, steps: int = 120) -> None:
    """A train_log.jsonl per drawn checkpoint, as train writes it: a check before each round's first step and
    every 50 steps, the losses at every step; a second round from step 100."""
    for name in figures.NAMES:
        (folder / name).mkdir(parents=True)
        rows = [{"step": 0, "tpf": 1.0, "accuracy": 1.0}]
        for s in range(1, steps + 1):
            if s == 101:
                rows.append({"step": 100, "tpf": 1.5, "accuracy": 0.9, "round": 2})
            check = {"tpf": 1 + s / 100, "accuracy": 0.8} if s % 50 == 0 else {}
            rows.append({"step": s, "loss": 5.0 / s, "ar": 0.4 / s, "consistency": 1.0 / s, **check}
                        | ({"round": 2} if s > 100 else {}))
        (folder / name / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_training_summary_keeps_each_rounds_moving_mean_and_every_check(tmp_path):
    write_training_logs(tmp_path)
    figures.write_training_summary(tmp_path, tmp_path / "curves.json")
    summary = json.loads((tmp_path / "curves.json").read_text())
    assert (summary["smoothing"], summary["every"], list(summary["models"])) == (50, 10, list(figures.NAMES))
    first, second = summary["models"]["cllm"]["rounds"]
    assert (first["round"], first["start"], first["step"]) == (1, 0, [50, 60, 70, 80, 90, 100])
    assert first["consistency"][0] == round(sum(1.0 / s for s in range(1, 51)) / 50, 6)
    assert first["ar"][-1] == round(sum(0.4 / s for s in range(51, 101)) / 50, 6)
    # a round shorter than the window: the mean of all its steps so far, at its last step
    assert (second["round"], second["start"], second["step"]) == (2, 100, [120])
    assert second["consistency"] == [round(sum(1.0 / s for s in range(101, 121)) / 20, 6)]
    checks = summary["models"]["cllm"]["checks"]
    assert [(c["step"], c["round"], c["tpf"]) for c in checks] == [(0, 1, 1.0), (50, 1, 1.5), (100, 1, 2.0), (100, 2, 1.5)]


def test_committed_figures_are_drawn_from_the_committed_results():
    assert figures.stale() == [], "rebuild them: python -m jacobi_min figures"


def test_real_model_summaries_label_reports_with_other_prompt_counts():
    row = lambda tpf, seconds: {"tpf": tpf, "seconds": seconds}
    main = {"methods": {"jacobi n=4": row([1.0, 1.5], [2.0, 2.0])}, "reference_seconds": [1.0, 1.0]}
    extra = {"methods": {"jacobi n=32": row([1.5], [4.0])}, "reference_seconds": [2.0]}
    more = {"methods": {"multiblock n=64": row([1.25, 1.75], [8.0, 2.0])}, "reference_seconds": [3.0, 2.0]}
    assert figures.method_summaries([main, extra, more]) == [
        ("jacobi n=4", 1.25, 0.5), ("jacobi n=32 (1 prompts)", 1.5, 0.5), ("multiblock n=64", 1.5, 0.5)]


def test_machine_reads_the_first_processor_of_cpuinfo(tmp_path):
    """Two processors in the file: the first one's fields, values stripped, a colon inside a value kept."""
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nmodel name\t: Test CPU: v2 @ 2.0GHz\ncpu family\t: 6\nmodel\t\t: 207\n"
                    "\nprocessor\t: 1\nmodel name\t: Other CPU\n")
    assert timing.cpuinfo(path) == {"processor": "0", "model name": "Test CPU: v2 @ 2.0GHz", "cpu family": "6",
                                   "model": "207"}
    assert timing.cpuinfo(tmp_path / "absent") == {}
    info = timing.machine()
    assert info["cpus"] == os.cpu_count() and info["torch"] == torch.__version__ and info["cpu"]


def test_cost_model_command(tmp_path):
    from jacobi_min.tools.commands import main
    out = tmp_path / "costs.json"
    main(["cost-model", "--model", "base", "--ks", "1", "2", "8", "--context", "4", "--out", str(out)])
    costs = json.loads(out.read_text())
    assert costs["k"] == [1, 2, 8] and costs["context"] == 4 and costs["meta"]["model"] == "base"
    assert costs["meta"]["machine"] == timing.machine()
    assert len(costs["latency_s"]) == 3 and all(t > 0 for t in costs["latency_s"])


def test_eval_command_scores_each_model_on_each_bucket_as_evaluate_does(tmp_path):
    from jacobi_min.tools.commands import main
    from jacobi_min.tools.evaluate import evaluate
    out = tmp_path / "scores.json"
    main(["eval", "--models", "base", "jacobi-forcing", "--labels", "AR model", "trained", "--lengths", "short", "medium",
          "--problems", "2", "--out", str(out)])
    saved = json.loads(out.read_text())
    assert saved["models"] == {"AR model": "base", "trained": "jacobi-forcing"} and saved["problems"] == 2
    for label, name in saved["models"].items():
        model, tokenizer = jacobi_min.load(name)
        for length in ("short", "medium"):
            problems = task.problems("test", 2, seed=bench.BenchConfig.seed, length=length)
            assert saved["scores"][label][length] == evaluate(model, tokenizer, problems, 16, progress=False)
    with pytest.raises(SystemExit, match="--labels names 1 models, --models 2"):
        main(["eval", "--models", "base", "cllm", "--labels", "one", "--problems", "1"])
    with pytest.raises(SystemExit, match="each model needs a label of its own"):
        main(["eval", "--models", "base", "base", "--problems", "1"])
    assert bench.scores(["base", "base"], ["short"], 2, workers=1) == [{"short": saved["scores"]["AR model"]["short"]}] * 2


def test_predicted_speedup_by_hand_with_extrapolation():
    """L(1) = 1, L(2) = 1.5, L(4) = 2 ms: slope (2 - 1) / (4 - 1) = 1/3 per token beyond k = 4, so L(7) = 3.
    Forwards fed 4, 2 and 7 tokens for 9 tokens: speedup = 9 · L(1) / (2 + 1.5 + 3) = 9 / 6.5."""
    ks, latency = [1, 2, 4], [1.0, 1.5, 2.0]
    assert timing.predicted_speedup([4, 2, 7], 9, latency, ks) == pytest.approx(9 / 6.5)
    assert timing.predicted_speedup([1] * 5, 5, latency, ks) == pytest.approx(1.0)  # AR: one token a forward


def test_predicted_speedup_interpolates_between_measured_k():
    """L(1) = 1, L(2) = 1.5, L(4) = 2 ms: L(3) lies halfway between L(2) and L(4), 1.75.
    Forwards fed 3 and 3 tokens for 6 tokens: speedup = 6 · L(1) / (1.75 + 1.75) = 6 / 3.5."""
    assert timing.predicted_speedup([3, 3], 6, [1.0, 1.5, 2.0], [1, 2, 4]) == pytest.approx(6 / 3.5)


def test_summarise_by_hand():
    """Two chunks (tokens, seconds without prefill, seconds with): the method's tokens/s over AR's, per chunk."""
    ar = {"chunks": [[10, 1.0, 2.0], [10, 2.0, 3.0]]}
    row = {"method": "m", "model": "x", "n": 4, "chunks": [[10, 0.5, 1.5], [10, 0.5, 1.0]], "tokens": 20,
           "forwards": 8, "correct": 3, "problems": 4, "fed": [], "identical": 4, "hist": {"2": 1}}
    s = bench.summarise(row, ar, [1.0], [1])
    assert (s["tpf"], s["accuracy"], s["predicted_speedup"]) == (2.5, 0.75, None)
    assert s["speedup_range"] == pytest.approx([2.0, 4.0]) and s["speedup_median"] == pytest.approx(3.0)
    assert s["speedup_with_prefill_range"] == pytest.approx([4 / 3, 3.0])
    assert s["tps_range"] == pytest.approx([20.0, 20.0])


def test_batched_throughput_by_hand():
    """B = 2: AR ran forwards fed 2, 2 and 1 tokens (rows) and one prefill of 6, for 5 tokens in 2 s; Jacobi
    forwards of 2 rows × 4 and 1 row × 3 and the same prefill, for 6 tokens in 1 s. With L(k) = k ms the
    predicted speedup is (2 + 2 + 1 + 6) / (8 + 3 + 6) · 6 / 5."""
    total = {"AR": {"tokens": 5, "seconds": 2.0, "rows": [2, 2, 1], "fed": [2, 2, 1, 6]},
             "Jacobi Forcing": {"tokens": 6, "seconds": 1.0, "rows": [2, 1], "fed": [8, 3, 6]}}
    row = throughput.summary({2: total}, [1.0, 8.0], [1, 8])["2"]
    assert row["tokens_per_s"] == {"AR": 2.5, "Jacobi Forcing": 6.0} and row["speedup"] == pytest.approx(2.4)
    assert row["predicted_speedup"] == pytest.approx(11 / 17 * 6 / 5)
    assert row["tpf"] == 2.0 and row["forwards"] == {"AR": 3, "Jacobi Forcing": 2}


def test_batched_throughput_runs_end_to_end(tmp_path):
    """Both decoders at each B on a few problems, the file written; the table has a row per bucket and B."""
    out = tmp_path / "throughput.json"
    cfg = throughput.ThroughputConfig(batch=[1, 2], problems=2, lengths=["short"], workers=1, cost_ks=[1, 2, 4, 8])
    results = throughput.run(cfg, out)
    assert json.loads(out.read_text()) == results
    assert results["config"]["batch"] == [1, 2] and list(results["buckets"]) == ["short"]
    rows = results["buckets"]["short"]
    assert set(rows) == {"1", "2"}
    assert rows["1"]["forwards"]["AR"] > rows["2"]["forwards"]["AR"]  # two rows share each AR forward at B = 2
    for r in rows.values():
        assert r["speedup"] == pytest.approx(r["tokens_per_s"]["Jacobi Forcing"] / r["tokens_per_s"]["AR"])
        assert r["tpf"] >= 1 and r["predicted_speedup"] > 0
    assert len(throughput.format_table(results).splitlines()) == 3


def test_bench_batch_runs_the_throughput_benchmark(monkeypatch, tmp_path, capsys):
    from jacobi_min.tools.commands import main
    calls = []
    monkeypatch.setattr(throughput, "run", lambda cfg, out: calls.append((cfg, out)) or {"buckets": {}})
    main(["bench", "--batch", "1", "8", "--lengths", "long", "--workers", "1"])
    main(["bench", "--batch", "4", "--problems", "9", "--out", str(tmp_path / "t.json")])
    (first, out1), (second, out2) = calls
    assert (first.batch, first.problems, first.lengths, first.workers, out1) == ([1, 8], 128, ["long"], 1, throughput.OUT)
    assert (second.batch, second.problems, out2) == ([4], 9, tmp_path / "t.json")
