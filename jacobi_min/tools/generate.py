"""The `python -m jacobi_min generate` command: stream the text as it is verified, then one line of statistics."""
import math
import sys
import time
from functools import partial

from ..generate import decode
from ..jacobi import DecodeResult, greedy_decode
from ..model import embedded_names
from ..sampling import Pick, sampler
from ..utils import eos_ids
from . import realtasks, task
from .cli import at_least, dtype_of, load_model, model_args, probability

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
    if not text.strip():
        print("error: the prompt is empty: give a question, e.g. python -m jacobi_min generate \"Mia has 3 apples. "
              "She buys 4 more. How many apples does she have?\"", file=sys.stderr)
        sys.exit(2)
    model, tokenizer = load_model(args.model, args.device, dtype_of(args))
    if args.chat and not tokenizer.chat_template:
        sys.exit(f"error: --chat: the tokenizer of {args.model} has no chat template")
    embedded = args.model in embedded_names()
    if embedded and not args.raw and not args.chat:
        text = task.as_prompt(text)
    ids = realtasks.chat_ids(tokenizer, text) if args.chat else tokenizer(text)["input_ids"]
    if embedded and (unseen := unseen_words(tokenizer, text)):
        print(f"note: {args.model} never saw {', '.join(map(repr, unseen))} in training (its tokenizer splits "
              f"{'it' if len(unseen) == 1 else 'them'}); expect a poor answer. Names it knows: "
              f"{', '.join(task.NAMES[:5])}, …", file=sys.stderr)
    pick = sampler(args.temperature, args.top_k, args.top_p, args.seed)
    run(model, tokenizer, ids, pick, args.block_size, args.blocks, args.pool_size, args.max_new_tokens,
        color=sys.stdout.isatty(), compare=args.compare)


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
    p.set_defaults(run=generate_command)
