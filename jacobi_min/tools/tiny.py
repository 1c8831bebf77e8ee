"""The embedded default model: a tiny Qwen2 trained from scratch on the task.

Three pieces, rebuilt by `python -m jacobi_min train-base`:

1. a byte-level BPE tokenizer trained on the training split with Qwen2's own
   normalizer and pre-tokenizer (numbers split into single digits), saved as a
   `Qwen2Tokenizer` (`<|endoftext|>` = EOS, `<|pad|>` = PAD);
2. a `Qwen2ForCausalLM` from a small `Qwen2Config` (grouped-query attention,
   tied embeddings, a few million parameters);
3. plain next-token training on `prompt + " " + solution + EOS`:

       L = - mean_t log p_θ(x_t | x_<t)        (PAD targets ignored)

   with AdamW, linear warm-up then cosine decay, seeded. The problems mix
   the three length buckets in equal numbers; each step draws one bucket and
   fills about `tokens_per_step` tokens from it, so a batch of short answers
   is not padded to the length of a long one.

The shipped base trains in two stages (`CURRICULUM`, `train_curriculum`): short
stories first, then the full mix from those weights (`BaseConfig.init`: the
tokenizer kept, a second warm-up and cosine cycle on freshly drawn problems).
"""
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from tqdm import tqdm
from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2Tokenizer

from ..utils import lr_at, restore, snapshot
from . import task

EOS, PAD = "<|endoftext|>", "<|pad|>"
CURRICULUM = ({"steps": 900, "bucket_weights": (1.0, 0.0, 0.0), "seed": 0},  # the shipped base's two stages
              {"steps": 3000, "seed": 1})


@dataclass
class BaseConfig:
    vocab_size: int = 2048
    hidden_size: int = 256
    intermediate_size: int = 768
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    context: int = 640
    train_problems: int = 120000
    steps: int = 3600
    tokens_per_step: int = 8192
    bucket_weights: tuple[float, ...] = (0.4, 0.3, 0.3)  # short, medium, long: the short stories need the most
    save_every: int = 100  # steps between resume snapshots
    lr: float = 2e-3
    warmup: int = 100
    weight_decay: float = 0.1
    seed: int = 0
    init: str = ""  # a checkpoint to continue from (its tokenizer kept), for a second warm-up + cosine cycle


def build_tokenizer(texts: list[str], vocab_size: int) -> Qwen2Tokenizer:
    """Byte-level BPE with EOS and PAD, trained with Qwen2's normalizer and pre-tokenizer.

    `AutoTokenizer` loads the tokenizer of every `qwen2` checkpoint as
    `Qwen2Tokenizer`, which rebuilds the pipeline from the vocabulary and
    merges alone; training with that same pipeline makes the ids identical.
    """
    qwen_pipeline = Qwen2Tokenizer().backend_tokenizer
    bpe = Tokenizer(models.BPE())
    bpe.normalizer, bpe.pre_tokenizer = qwen_pipeline.normalizer, qwen_pipeline.pre_tokenizer
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS, PAD],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(texts, trainer)
    learned = json.loads(bpe.to_str())["model"]
    return Qwen2Tokenizer(vocab=learned["vocab"], merges=[tuple(m) for m in learned["merges"]],
                          eos_token=EOS, pad_token=PAD)


def build_model(cfg: BaseConfig, tokenizer) -> Qwen2ForCausalLM:
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads,
        max_position_embeddings=cfg.context, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    return Qwen2ForCausalLM(config)


def encode(tokenizer, problem: task.Problem) -> list[int]:
    """Prompt and completion tokenised separately (as at inference), then EOS."""
    prompt = tokenizer(problem.prompt)["input_ids"]
    completion = tokenizer(problem.completion)["input_ids"]
    return prompt + completion + [tokenizer.eos_token_id]


def pad_batch(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (B, T) ids and labels (-100 on PAD)."""
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), pad_id)
    labels = torch.full((len(rows), width), -100)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
        labels[i, :len(row)] = torch.tensor(row)
    return ids, labels


def length_groups(rows: list[list[int]], problems: list[task.Problem]) -> list[list[list[int]]]:
    """The encoded rows split by the length bucket of their problem."""
    groups = {name: [] for name in task.BUCKETS}
    for row, problem in zip(rows, problems):
        groups[task.bucket_of(task.answer_length(problem))].append(row)
    return [g for g in groups.values() if g]


def draw_batch(groups: list[list[list[int]]], weights: list[float], tokens: int, gen: torch.Generator) -> list[list[int]]:
    """One bucket drawn with probability ∝ `weights`, then as many of its rows as fit `tokens` at its longest row."""
    group = groups[torch.multinomial(torch.tensor(weights), 1, generator=gen).item()]
    size = max(1, tokens // max(map(len, group)))
    return [group[i] for i in torch.randint(len(group), (size,), generator=gen)]


def train_base(out_dir: Path, cfg: BaseConfig = BaseConfig()) -> dict:
    """Tokenizer + tiny Qwen2 trained from scratch, seeded by cfg.seed; writes checkpoint and log to
    out_dir. The caller's global RNG state is handed back afterwards."""
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        return fit_base(out_dir, cfg)


def fit_base(out_dir: Path, cfg: BaseConfig) -> dict:
    """`train_base`'s loop, on the global RNG as the caller seeded it."""
    train = task.problems("train", cfg.train_problems, seed=cfg.seed)
    tokenizer, model = starting_point(cfg, train)
    groups = length_groups([encode(tokenizer, p) for p in train], train)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    log, start = [], time.time()
    resume = out_dir / "resume.pt"
    if resume.exists():
        state = restore(resume, model, opt)
        log = state["log"]
        gen.set_state(state["gen"])
        start -= log[-1]["seconds"]
    model.train()
    for step in (bar := tqdm(range(len(log), cfg.steps), desc="train-base", initial=len(log), total=cfg.steps)):
        ids, labels = pad_batch(draw_batch(groups, cfg.bucket_weights, cfg.tokens_per_step, gen), tokenizer.pad_token_id)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg.steps, cfg.warmup, cfg.lr)
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        log.append({"step": step, "loss": loss.item(), "seconds": round(time.time() - start, 1)})
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if (step + 1) % cfg.save_every == 0:
            snapshot(resume, model, opt, log, gen=gen.get_state())
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.to(torch.float16).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    params = sum(p.numel() for p in model.parameters())
    summary = {"config": asdict(cfg), "parameters": params, "train_seconds": round(time.time() - start)}
    (out_dir / "train_config.json").write_text(json.dumps(summary, indent=2))
    (out_dir / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    resume.unlink(missing_ok=True)
    return summary


def train_curriculum(out_dir: Path, cfg: BaseConfig = BaseConfig()) -> dict:
    """The shipped base's two stages: short stories only (to out_dir/short-first), then the full
    mix from those weights with a new warm-up and cosine (to out_dir). Each stage resumes; a
    finished first stage is kept."""
    first = out_dir / "short-first"
    if not (first / "model.safetensors").exists():
        train_base(first, replace(cfg, **CURRICULUM[0]))
    return train_base(out_dir, replace(cfg, **CURRICULUM[1], init=str(first)))


def starting_point(cfg: BaseConfig, train: list[task.Problem]):
    """A new tokenizer and a randomly initialised model, or `cfg.init`'s, continued in float32."""
    if not cfg.init:
        tokenizer = build_tokenizer([p.prompt + p.completion for p in train], cfg.vocab_size)
        return tokenizer, build_model(cfg, tokenizer)
    if not (Path(cfg.init) / "config.json").exists():
        raise FileNotFoundError(f"no checkpoint to continue from at {cfg.init} (config.json missing)")
    tokenizer = Qwen2Tokenizer.from_pretrained(cfg.init)
    return tokenizer, Qwen2ForCausalLM.from_pretrained(cfg.init, dtype=torch.float32)


def add_commands(commands) -> None:
    p = commands.add_parser("train-base", help="train the embedded tiny Qwen2 and its tokenizer as shipped: 900 steps of "
                                               "short stories (seed 0, to OUT/short-first), then 3,000 of the full mix "
                                               "from those weights (seed 1, to OUT); ~100 min on 2 cores")
    p.add_argument("--out", type=Path, default=Path("runs/base"),
                   help="each stage resumes from its resume.pt when present; jacobi_min/checkpoints/base rebuilds the shipped model")
    p.set_defaults(run=lambda args: print(train_curriculum(args.out)))
