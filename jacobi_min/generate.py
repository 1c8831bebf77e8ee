"""Jacobi decoding behind transformers' `generate`, and the `python -m jacobi_min generate` command.

    out = model.generate(input_ids, custom_generate=jacobi_generate, block_size=16, max_new_tokens=256)

transformers 5.x `generate` merges the arguments with the model's generation
config, builds the logits processors and the stopping criteria, then hands
them to a callable `custom_generate` in place of its own decoding loop. Here
that loop is `jacobi_decode` (or `multiblock_decode` with blocks > 1 or a
recycling pool), so the output is generate's greedy output token for token,
or, with do_sample=True, an exact sample (sampling.py). Honoured:

- max_new_tokens / max_length, eos_token_id (int, list or tensor);
- every logits processor, applied at each position to that position's own
  prefix (sampling.Pick); do_sample=True adds Gumbel noise keyed by
  (seed, position): the tokens equal the position-seeded AR sampler's for the
  same `seed` (a keyword argument; by default drawn from torch's global RNG),
  not those of generate's own multinomial sampler, which uses other random
  numbers;
- every stopping criterion, checked on the whole sequence after each new
  token, as if a verified chunk had been appended one token at a time, so
  decoding stops exactly where generate's loop would (scores are not passed);
- a streamer: `put` once per verified chunk (the prefill's token, then each
  forward's tokens), `end` at the end.

Limits: batch size 1, no padding, no beam search, no scores / attentions /
hidden states in the output, no cache handed in or out. Each raises a
ValueError that says so.

Two ways in, one loop:

- the folder `hub/jacobi-decoding` (`custom_generate="hub/jacobi-decoding",
  trust_remote_code=True`): generate hands it every argument, so a
  `streamer` and `stop_strings` with `tokenizer=` work as with generate's own
  loop. Use it for streaming and stop strings.
- this callable (`custom_generate=jacobi_generate`): no folder, no remote
  code, and the arguments above are keywords of this function. generate
  hands a callable only what it does not know itself: it puts the prompt
  into `streamer` but drops `streamer` and `tokenizer`, so bind the
  streamer, `custom_generate=partial(jacobi_generate, streamer=s)` next to
  `streamer=s`, and for stop strings pass
  `stopping_criteria=[StopStringCriteria(tokenizer, strings)]` (`stop_strings=`
  raises there for want of the tokenizer).
"""
import math
import sys
import time
from dataclasses import dataclass
from functools import partial

import torch
from transformers.generation.utils import GenerateDecoderOnlyOutput

from . import task
from .cli import at_least, dtype_of, model_args, probability
from .jacobi import DecodeResult, eos_ids, greedy_decode, jacobi_decode
from .model import embedded_names, load
from .multiblock import check_multiblock, multiblock_decode
from .sampling import Pick, sampler

MODEL_KWARGS = {"attention_mask", "position_ids", "past_key_values", "use_cache", "logits_to_keep"}
UNSUPPORTED_OUTPUTS = ("output_scores", "output_logits", "output_attentions", "output_hidden_states")


@dataclass
class JacobiGenerateOutput(GenerateDecoderOnlyOutput):
    """generate's output (`sequences`: prompt + generated) with the decoding statistics."""
    accepted: list[int] | None = None  # tokens committed by each decoding forward (prefill excluded)
    forwards = DecodeResult.forwards  # the same definitions as every decoder's result
    tpf = DecodeResult.tpf


def decode(model, prompt: list[int], max_new_tokens: int, block_size: int = 16, blocks: int = 1,
           spawn_ratio: float = 0.85, pool_size: int = 0, **options) -> DecodeResult:
    """`jacobi_decode`, or `multiblock_decode` when blocks > 1 or pool_size > 0; `options` go to either."""
    if blocks == 1 and pool_size == 0:
        return jacobi_decode(model, prompt, block_size, max_new_tokens, **options)
    return multiblock_decode(model, prompt, block_size, max_new_tokens, blocks, spawn_ratio, pool_size, **options)


def check_supported(input_ids: torch.Tensor, generation_config, model_kwargs: dict) -> None:
    """A ValueError naming what `jacobi_generate` cannot do."""
    if generation_config.num_beams > 1:
        raise ValueError(f"jacobi_generate does not do beam search, got num_beams={generation_config.num_beams}")
    if input_ids.shape[0] != 1:
        raise ValueError(f"jacobi_generate decodes one sequence at a time (batch size 1), got batch size "
                         f"{input_ids.shape[0]}: call generate once per prompt")
    if unknown := set(model_kwargs) - MODEL_KWARGS:
        raise ValueError(f"jacobi_generate passes no extra inputs to the model, got {sorted(unknown)}")
    mask, cache = model_kwargs.get("attention_mask"), model_kwargs.get("past_key_values")
    if mask is not None and not bool(mask.all()):
        raise ValueError("jacobi_generate does not support padding: the attention_mask masks prompt tokens (generate "
                         "infers that from pad tokens in the prompt; pass attention_mask=torch.ones_like(input_ids))")
    if cache is not None and cache.get_seq_length() > 0:
        raise ValueError("jacobi_generate starts from an empty cache: past_key_values must be empty")
    positions = model_kwargs.get("position_ids")
    if positions is not None and not torch.equal(positions.reshape(-1).cpu(), torch.arange(input_ids.shape[1])):
        raise ValueError("jacobi_generate takes positions from the cache: position_ids must be 0, 1, …")
    if generation_config.return_dict_in_generate and (asked := [o for o in UNSUPPORTED_OUTPUTS
                                                                if getattr(generation_config, o)]):
        raise ValueError(f"jacobi_generate does not return {', '.join(asked)}")


def jacobi_generate(model, input_ids, logits_processor, stopping_criteria, generation_config, streamer=None, *,
                    block_size: int = 16, blocks: int = 1, spawn_ratio: float = 0.85, pool_size: int = 0,
                    seed: int | None = None, **model_kwargs):
    """generate's decoding loop done by Jacobi decoding: `model.generate(ids, custom_generate=jacobi_generate)`.

    block_size is n; blocks > 1 (K blocks in flight, spawned at ratio r = spawn_ratio) or pool_size > 0
    uses multi-block decoding with rejection recycling (the paper's best: blocks=2, pool_size=4).
    Returns generate's tensor, or with return_dict_in_generate=True a `JacobiGenerateOutput`.
    """
    # 1. what is supported; the prompt and the budget generate prepared
    check_supported(input_ids, generation_config, model_kwargs)
    check_multiblock(blocks, spawn_ratio, pool_size)
    prompt = input_ids[0].tolist()
    max_new_tokens = generation_config.max_length - len(prompt)
    eos = generation_config.eos_token_id
    eos = [] if eos is None else torch.as_tensor(eos).reshape(-1).tolist()
    # 2. each position's token: the processors on its own prefix, plus Gumbel noise keyed by (seed, t) when sampling
    if generation_config.do_sample and seed is None:
        seed = int(torch.randint(2**62, (1,)))  # torch.manual_seed makes a run repeatable, as with generate
    pick = Pick(logits_processor, seed if generation_config.do_sample else None)

    # 3. decode; the stopping criteria see the whole sequence after every new token
    def stopping(output: list[int]) -> bool:
        return bool(stopping_criteria(torch.tensor([prompt + output], device=input_ids.device), None)[0])

    def on_chunk(tokens: list[int]) -> None:
        streamer.put(torch.tensor(tokens))

    result = decode(model, prompt, max_new_tokens, block_size, blocks, spawn_ratio, pool_size, eos_token_id=eos,
                    pick=pick, stopping=stopping, on_chunk=None if streamer is None else on_chunk)
    if streamer is not None:
        streamer.end()
    # 4. what generate returns
    sequences = torch.tensor([prompt + result.tokens], device=input_ids.device)
    if generation_config.return_dict_in_generate:
        return JacobiGenerateOutput(sequences=sequences, accepted=result.accepted)
    return sequences


# The `python -m jacobi_min generate` command: stream the text as it is verified, then one line of statistics.

COLORS = ("\033[36m", "\033[33m")  # each forward's chunk in turn: cyan, yellow
RESET = "\033[0m"


class ChunkPrinter:
    """Prints the text of each verified chunk as it arrives, alternating colours by forward."""

    def __init__(self, tokenizer, color: bool, file=None):
        self.tokenizer, self.color, self.file = tokenizer, color, file
        self.tokens, self.shown, self.chunks = [], "", 0

    def __call__(self, tokens: list[int]) -> None:
        self.tokens += tokens
        text = self.tokenizer.decode(self.tokens, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return  # a character cut in two: wait for the next chunk
        new, self.shown = text[len(self.shown):], text
        if self.color and new:
            new = COLORS[self.chunks % len(COLORS)] + new + RESET
        self.chunks += 1
        print(new, end="", flush=True, file=self.file)

    def end(self) -> None:
        print(self.tokenizer.decode(self.tokens, skip_special_tokens=True)[len(self.shown):], file=self.file)


def unseen_words(tokenizer, text: str) -> list[str]:
    """The words of `text` an embedded model never saw in training, in order, once each.

    Its tokenizer learned every word of the training problems as one token (the
    merges ran out below the vocabulary cap, tested), so a word it splits into
    several tokens is one training never showed the model: a name outside the
    task's list, say.
    """
    backend = tokenizer.backend_tokenizer
    words = [text[a:b].strip() for piece, (a, b) in backend.pre_tokenizer.pre_tokenize_str(text)
             if len(backend.model.tokenize(piece)) > 1]
    return list(dict.fromkeys(words))


def timed(run_decode, on_chunk=None) -> tuple[DecodeResult, float]:
    """(result, tokens/s) of `run_decode(on_chunk=…)`; the prefill and its token are left out."""
    start = None

    def watch(tokens: list[int]) -> None:
        nonlocal start
        start = start or time.perf_counter()  # the prefill's token has arrived
        if on_chunk:
            on_chunk(tokens)

    result = run_decode(on_chunk=watch)
    seconds = time.perf_counter() - start if start else 0.0
    return result, (len(result.tokens) - 1) / seconds if seconds > 0 else float("nan")


def stats(result: DecodeResult, rate: float, eos: set[int], max_new_tokens: int) -> str:
    """Tokens, forwards, TPF and tokens/s, in words when no decoding forward ran, and why decoding stopped."""
    stop = "EOS" if result.tokens and result.tokens[-1] in eos else f"the {max_new_tokens}-token limit"
    if not result.forwards:
        return f"tokens {len(result.tokens)} · the answer ended in the prefill ({stop}): no decoding forward, no TPF"
    line = f"tokens {len(result.tokens)} · forwards {result.forwards} · TPF {result.tpf:.2f} · {rate:.1f} tokens/s"
    return line if stop == "EOS" else line + f" · cut at {stop} (raise --max-new-tokens)"


def speedup(rate: float, ar_rate: float) -> str:
    """rate / ar_rate, or why there is none (an answer that ended in the prefill has no rate)."""
    if math.isnan(rate) or math.isnan(ar_rate) or not ar_rate:
        return "speedup n/a (no decoding forward to time)"
    return f"speedup {rate / ar_rate:.2f}x"


def run(model, tokenizer, prompt: list[int], pick: Pick, block_size: int = 16, blocks: int = 1, pool_size: int = 0,
        max_new_tokens: int = 128, color: bool = False, compare: bool = False, file=None) -> DecodeResult:
    """Decode `prompt`, streaming the text, then print tokens, forwards, TPF and tokens/s (and AR's with `compare`)."""
    printer = ChunkPrinter(tokenizer, color, file)
    result, rate = timed(partial(decode, model, prompt, max_new_tokens, block_size, blocks, pool_size=pool_size,
                                 pick=pick), printer)
    printer.end()
    eos = eos_ids(model)
    line = f"Jacobi (n = {block_size}, K = {blocks}, pool {pool_size}): {stats(result, rate, eos, max_new_tokens)}"
    if compare:
        ar, ar_rate = timed(partial(greedy_decode, model, prompt, max_new_tokens, pick=pick))
        line += (f" | AR: {stats(ar, ar_rate, eos, max_new_tokens)} | same tokens: "
                 f"{'yes' if ar.tokens == result.tokens else 'NO'} | {speedup(rate, ar_rate)}")
    print(line + " (tokens/s: prefill left out)", file=file)
    return result


def generate_command(args) -> None:
    """Stream the decoded prompt (argument or stdin), then one line of statistics."""
    text = sys.stdin.read() if args.prompt is None else args.prompt
    model, tokenizer = load(args.model, args.device, dtype_of(args))
    if args.chat and not tokenizer.chat_template:
        sys.exit(f"error: --chat: the tokenizer of {args.model} has no chat template")
    embedded = args.model in embedded_names()
    if embedded and not args.raw and not args.chat:
        text = task.as_prompt(text)
    if args.chat:
        ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                            return_dict=True)["input_ids"]
    else:
        ids = tokenizer(text)["input_ids"]
    if embedded and (unseen := unseen_words(tokenizer, text)):
        print(f"note: {args.model} never saw {', '.join(map(repr, unseen))} in training (its tokenizer splits "
              f"{'it' if len(unseen) == 1 else 'them'}); expect a poor answer. Names it knows: "
              f"{', '.join(task.NAMES[:5])}, …", file=sys.stderr)
    pick = sampler(args.temperature, args.top_k, args.top_p, args.seed)
    run(model, tokenizer, ids, pick, args.block_size, args.blocks, args.pool_size, args.max_new_tokens,
        color=sys.stdout.isatty() and not args.no_color, compare=args.compare)


def add_commands(commands) -> None:
    p = commands.add_parser("generate", help="decode your own prompt: text streamed as verified, then TPF and tokens/s")
    p.add_argument("prompt", nargs="?", help="the prompt; read from stdin when left out")
    model_args(p, default="jacobi-forcing")
    p.add_argument("--chat", action="store_true", help="put the prompt in the tokenizer's chat template")
    p.add_argument("--raw", action="store_true",
                   help="the embedded models: decode the text as it is (by default a plain question is put in "
                        "their format, 'Question: …\\nAnswer:')")
    p.add_argument("--block-size", type=at_least(1), default=16, help="n, tokens per block")
    p.add_argument("--blocks", type=at_least(1), default=1, help="K, blocks in flight (the paper's best: 2)")
    p.add_argument("--pool-size", type=at_least(0), default=0, help="rejection-recycling pool (the paper's: 4)")
    p.add_argument("--temperature", type=at_least(0.0, float), default=0.0, help="0: greedy")
    p.add_argument("--top-k", type=at_least(0), default=0, help="0: off")
    p.add_argument("--top-p", type=probability, default=1.0, help="1: off")
    p.add_argument("--seed", type=at_least(0), default=0, help="sampling seed: the noise of position t comes from (seed, t)")
    p.add_argument("--max-new-tokens", type=at_least(1), default=task.MAX_ANSWER_TOKENS,
                   help="the embedded models' longest answers fit the default")
    p.add_argument("--compare", action="store_true", help="decode again with AR (same sampler): tokens, TPF, tokens/s")
    p.add_argument("--no-color", action="store_true", help="do not colour each forward's tokens")
    p.set_defaults(run=generate_command)
