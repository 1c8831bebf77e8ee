"""The batch that trained the shipped models' round 1 and CLLM (docs/results.md, "How the shipped
models were built"): the pipeline's stages, scheduled over LANES processes that share one CUDA GPU.

Round 1 per (seed, λ), round-2 collection in shards, round 2 per learning rate, CLLM per λ, the
ablation, and held-out scoring in shards; a smaller priority runs first, and at DEADLINE seconds
whatever has finished is packed into $OUT (scores in summary.json, logs, up to 8 checkpoints).
It read round 1's trajectories from $WORK/round1.jsonl (collected on CPU by the pipeline) and ran as

    WORK=... OUT=... DEADLINE=515 python experiments/training_runs/gpu-batch/run_batch.py

with `BASE` then pointing at the staged base, which is now the embedded `base`. It stopped at its
deadline after round 1, CLLM, the ablation and part of the scoring; round 2 of seed 0 was collected
with `col(0, 10.0, k)` for k < 14 at SHARDS=14 and trained on CPU.
"""
import json
import os
import shutil
import sys
import tarfile
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
E = os.environ
BASE = "base"
WORK = Path(E.get("WORK", "/tmp/work"))
OUT = Path(E.get("OUT", "/tmp/out"))
DEV = E.get("DEV", "cuda")
PROMPTS, SHARDS = int(E.get("PROMPTS", 4000)), int(E.get("SHARDS", 8))
STEPS1, STEPS2 = int(E.get("STEPS1", 1600)), int(E.get("STEPS2", 800))
PROBLEMS, EVAL_SHARDS = int(E.get("PROBLEMS", 300)), int(E.get("EVAL_SHARDS", 3))
LANES, DEADLINE = int(E.get("LANES", 14)), float(E.get("DEADLINE", 520))
EVAL_PROBLEMS = int(E.get("EVAL_PROBLEMS", 40))
BUCKETS = ("short", "medium", "long")
START = time.time()


def setup():
    import torch
    torch.set_num_threads(1)
    import transformers
    transformers.utils.logging.disable_progress_bar()


def cfg1(seed, lam):
    from jacobi_min.tools.pipeline import RECIPE
    from jacobi_min.train import TrainConfig
    return TrainConfig(steps=STEPS1, **{**RECIPE, "lam": lam}, seed=seed, eval_problems=EVAL_PROBLEMS)


def cfg2(seed, lam, lr):
    from jacobi_min.tools.pipeline import RECIPE
    from jacobi_min.train import TrainConfig
    return TrainConfig(steps=STEPS2, **{**RECIPE, "lam": lam, "lr": lr}, seed=seed, eval_problems=EVAL_PROBLEMS)


def round1_traj():
    from jacobi_min import trajectories
    return trajectories.load(WORK / "round1.jsonl")


def r1(seed, lam):
    import torch

    from jacobi_min.model import load
    from jacobi_min.tools.evaluate import (
        train_and_check as train,  # train with the held-out check
    )
    model, tok = load(BASE, DEV)
    log = train(model, tok, round1_traj(), cfg1(seed, lam), progress=False)
    torch.save({"model": model.state_dict(), "log": log}, WORK / f"r1-s{seed}-l{lam:g}.pt")
    return {"end": log[-1]}


def model_r1(seed, lam):
    import torch

    from jacobi_min.model import load
    model, tok = load(BASE, DEV)
    state = torch.load(WORK / f"r1-s{seed}-l{lam:g}.pt", map_location=DEV)
    model.load_state_dict(state["model"])
    return model, tok, state["log"]


def col(seed, lam, k):
    from jacobi_min import trajectories
    from jacobi_min.tools import pipeline, task
    model, tok, _ = model_r1(seed, lam)
    size = PROMPTS // SHARDS
    ids = pipeline.prompts(tok, PROMPTS, 0)[k * size:(k + 1) * size]
    traj = trajectories.collect(model, ids, 32, task.MAX_ANSWER_TOKENS, seed=k * size, workers=1)
    trajectories.save(WORK / f"col-s{seed}-l{lam:g}-{k}.jsonl", traj)
    return {"count": len(traj)}


def r2(seed, lam, lr):
    from jacobi_min import trajectories
    from jacobi_min.tools.evaluate import (
        train_and_check as train,  # train with the held-out check
    )
    from jacobi_min.tools.pipeline import join_logs
    from jacobi_min.train import save_checkpoint
    model, tok, log1 = model_r1(seed, lam)
    traj2 = [t for k in range(SHARDS) for t in trajectories.load(WORK / f"col-s{seed}-l{lam:g}-{k}.jsonl")]
    cfg = cfg2(seed, lam, lr)
    log2 = train(model, tok, traj2, cfg, progress=False)
    save_checkpoint(model, tok, WORK / "ckpt" / jf_name(seed, lam, lr), cfg, join_logs(log1, log2),
                    extra={"round1": asdict(cfg1(seed, lam)), "trained_on": DEV})
    return {"end": log2[-1]}


def cllm(lam):
    from jacobi_min.model import load
    from jacobi_min.tools.pipeline import join_logs
    from jacobi_min.train import CLLM, save_checkpoint, train
    model, tok = load(BASE, DEV)
    settings = {k: v for k, v in CLLM.items() if k != "lam"}
    phase1 = replace(cfg1(0, lam), **settings)
    phase2 = replace(cfg2(0, lam, cfg1(0, lam).lr), **settings, seed=1)
    traj = round1_traj()
    log1 = train(model, tok, traj, phase1, progress=False)
    log2 = train(model, tok, traj, phase2, progress=False)
    save_checkpoint(model, tok, WORK / "ckpt" / f"cllm-l{lam:g}", phase2, join_logs(log1, log2),
                    extra={"phase1": asdict(phase1), "trained_on": DEV})
    return {"end": log2[-1]}


def ev(name, bucket, shard):
    from jacobi_min.jacobi import jacobi_decode
    from jacobi_min.model import load
    from jacobi_min.tools import task
    from jacobi_min.tools.evaluate import is_correct, prompt_ids, repetition
    model, tok = load(BASE if name == "base" else WORK / "ckpt" / name, DEV)
    size = PROBLEMS // EVAL_SHARDS
    problems = task.problems("test", PROBLEMS, seed=0, length=bucket)[shard * size:(shard + 1) * size]
    correct = tokens = forwards = 0
    rep = 0.0
    for p in problems:
        result = jacobi_decode(model, prompt_ids(tok, p), 16, task.MAX_ANSWER_TOKENS)
        correct += is_correct(tok, result.tokens, p)
        tokens, forwards = tokens + sum(result.accepted), forwards + result.forwards
        rep += repetition(result.tokens)
    return {"correct": correct, "problems": len(problems), "tokens": tokens, "forwards": forwards, "repetition": rep}


def ablate(name, seed):
    from jacobi_min.tools import pipeline, task
    cfg = pipeline.PipelineConfig(base=BASE, device=DEV, ablation_steps=int(E.get("ABL_STEPS", 150)),
                                  ablation_problems=int(E.get("ABL_PROBLEMS", 40)))
    held_out = task.problems("test", cfg.ablation_problems, seed=2, length="long")
    (WORK / "abl").mkdir(exist_ok=True)
    pipeline.SHARED["ablation"] = (cfg, WORK / "abl", round1_traj(), held_out)
    return {"name": name, **pipeline.ablation_run((name, seed))}


def jf_name(seed, lam, lr):
    return f"jf-s{seed}-l{lam:g}-lr{lr:g}"


def plan():
    """name -> (function, args, dependencies, priority); a smaller priority runs first."""
    lines = [(0, 10.0), (1, 10.0), (2, 10.0), (0, 3.0), (0, 30.0)]
    lrs = {(s, l): [3e-4, 2e-4, 5e-4] if l == 10.0 else [3e-4, 5e-4] for s, l in lines}
    tasks = {}
    for i, (s, l) in enumerate(lines):
        tasks[f"r1-s{s}-l{l:g}"] = (r1, (s, l), [], (0, i))
        shards = [f"col-s{s}-l{l:g}-{k}" for k in range(SHARDS)]
        for k, name in enumerate(shards):
            tasks[name] = (col, (s, l, k), [f"r1-s{s}-l{l:g}"], (3, i, k))
        for j, lr in enumerate(lrs[(s, l)]):
            model = jf_name(s, l, lr)
            tasks[model] = (r2, (s, l, lr), shards, (1, j, i))
            evals(tasks, model, (2 if j == 0 else 4, j, i))
    for i, lam in enumerate((3.0, 30.0, 10.0)):
        tasks[f"cllm-l{lam:g}"] = (cllm, (lam,), [], (0, 5 + i))
        evals(tasks, f"cllm-l{lam:g}", (2, 5 + i))
    from jacobi_min.tools.pipeline import ABLATION, SEEDED
    for i, (name, seed) in enumerate((n, s) for n in ABLATION for s in range(3 if n in SEEDED else 1)):
        tasks[f"abl-{i}"] = (ablate, (name, seed), [], (2, 9, i))
    evals(tasks, "base", (5, 0), train=None)
    return tasks


def evals(tasks, model, priority, train=True):
    for b in BUCKETS:
        for k in range(EVAL_SHARDS):
            tasks[f"ev-{model}-{b}-{k}"] = (ev, (model, b, k), [model] if train else [], (*priority, b, k))


def run_task(fn, args):
    start = time.time()
    try:
        return {"ok": True, "result": fn(*args), "seconds": round(time.time() - start, 1),
                "finished_at": round(time.time() - START, 1)}
    except Exception:
        return {"ok": False, "error": traceback.format_exc()[-3000:], "seconds": round(time.time() - start, 1)}


def schedule(tasks):
    done, failed, running = {}, set(), {}
    pool = ProcessPoolExecutor(LANES, mp_context=__import__("multiprocessing").get_context("spawn"), initializer=setup)
    while time.time() - START < DEADLINE:
        ready = sorted((t for t in tasks if t not in done and t not in running.values() and t not in failed
                        and all(d in done for d in tasks[t][2])), key=lambda t: tasks[t][3])
        for name in ready[:LANES - len(running)]:
            running[pool.submit(run_task, tasks[name][0], tasks[name][1])] = name
        if not running:
            break
        finished, _ = wait(list(running), timeout=5, return_when=FIRST_COMPLETED)
        for f in finished:
            name = running.pop(f)
            result = f.result()
            if result["ok"]:
                done[name] = result
            else:
                failed.add(name)
            print(f"{time.time() - START:6.0f}s {name}: {'ok' if result['ok'] else 'FAILED'} in {result['seconds']}s"
                  + ("" if result["ok"] else "\n" + result["error"]), flush=True)
            if not result["ok"]:
                FAILED[name] = result
    for p in pool._processes.values():
        p.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    return done, sorted(running.values())


FAILED = {}


def scores(done):
    table = {}
    for name, result in done.items():
        if not name.startswith("ev-"):
            continue
        model, bucket, _ = name[3:].rsplit("-", 2)
        t = table.setdefault(model, {}).setdefault(bucket, {"correct": 0, "problems": 0, "tokens": 0, "forwards": 0})
        for key in t:
            t[key] += result["result"][key]
    for model in table.values():
        for t in model.values():
            t["accuracy"], t["tpf"] = t["correct"] / t["problems"], t["tokens"] / t["forwards"]
    return table


def pack(done, unfinished):
    OUT.mkdir(parents=True, exist_ok=True)
    table = scores(done)
    summary = {"tasks": done, "failed": FAILED, "unfinished": unfinished, "scores": table,
               "settings": {"prompts": PROMPTS, "shards": SHARDS, "steps1": STEPS1, "steps2": STEPS2, "problems": PROBLEMS, "lanes": LANES, "deadline": DEADLINE, "device": DEV}}
    (WORK / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    for name, buckets in sorted(table.items()):
        print(name, " ".join(f"{b} {t['accuracy']:.1%}/{t['tpf']:.2f} ({t['problems']})" for b, t in buckets.items()))
    with tarfile.open(OUT / "results.tar.gz", "w:gz") as tar:
        tar.add(WORK / "summary.json", "summary.json")
        for ckpt in sorted((WORK / "ckpt").glob("*")):
            for f in ("train_config.json", "train_log.jsonl"):
                if (ckpt / f).exists():
                    tar.add(ckpt / f, f"logs/{ckpt.name}/{f}")
        for f in sorted(WORK.glob("r1-*.pt")):
            import torch
            (WORK / f"{f.stem}.log.json").write_text(json.dumps(torch.load(f, map_location="cpu")["log"]))
            tar.add(WORK / f"{f.stem}.log.json", f"logs/{f.stem}.json")
    order = [jf_name(s, 10.0, 3e-4) for s in (0, 1, 2)] + ["cllm-l3", "cllm-l30", jf_name(0, 10.0, 2e-4),
             jf_name(0, 10.0, 5e-4), jf_name(0, 3.0, 3e-4), jf_name(0, 30.0, 3e-4)]
    ready = [m for m in order if (WORK / "ckpt" / m / "model.safetensors").exists()][:8]
    for i in range(0, len(ready), 2):
        with tarfile.open(OUT / f"models{i // 2}.tar", "w") as tar:
            for m in ready[i:i + 2]:
                for f in ("model.safetensors", "config.json", "generation_config.json"):
                    if (WORK / "ckpt" / m / f).exists():
                        tar.add(WORK / "ckpt" / m / f, f"{m}/{f}")


if __name__ == "__main__":
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "ckpt").mkdir(exist_ok=True)
    done, unfinished = schedule(plan())
    pack(done, unfinished)
    print(f"packed at {time.time() - START:.0f}s; unfinished: {unfinished}", flush=True)
