"""Jacobi decoding behind model.generate: generate's greedy output token for token; sampling equal to the
position-seeded AR sampler, whose frequencies are the softmax; the `generate` command."""
import io
import re
import threading
from functools import cache, partial
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from transformers import (
    LogitsProcessorList,
    Qwen2Config,
    StoppingCriteriaList,
    StopStringCriteria,
    SynthIDTextWatermarkingConfig,
    TemperatureLogitsWarper,
    TextIteratorStreamer,
    TextStreamer,
    TopKLogitsWarper,
    TopPLogitsWarper,
    WatermarkingConfig,
)
from transformers.generation.streamers import BaseStreamer

from jacobi_min import (
    greedy_decode,
    jacobi_decode,
    jacobi_generate,
    load,
    multiblock_decode,
    sampler,
)
from jacobi_min.generate import JacobiGenerateOutput
from jacobi_min.model import CHECKPOINTS
from jacobi_min.sampling import Pick, gumbel
from jacobi_min.tools import task, tiny
from jacobi_min.tools.commands import main
from jacobi_min.tools.evaluate import prompt_ids
from jacobi_min.tools.generate import COLORS, run, unseen_words
from tests.conftest import ARCHS, tiny_model

PROMPTS = [[5, 9, 12, 7, 30, 5, 9], [11]]
FOLDER = str(Path(__file__).resolve().parents[1] / "hub" / "jacobi-decoding")
EMBEDDED = sorted(path.name for path in CHECKPOINTS.iterdir() if (path / "config.json").is_file())


def generate(model, prompt: list[int], **kwargs) -> list[int]:
    """The new tokens of model.generate with an explicit all-ones mask; kwargs go to generate."""
    ids = torch.tensor([prompt])
    return model.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)[0, len(prompt):].tolist()


@cache
def random_model(arch: str = "qwen2-gqa-tied", eos: int | tuple = 3):
    """A tiny random model (conftest.py); eos=() for one that never stops early."""
    return tiny_model(arch, vocab=64, eos=list(eos) if isinstance(eos, tuple) else eos)


@cache
def embedded(name: str):
    return load(name)


def problem_ids(tokenizer, count: int) -> list[list[int]]:
    return [prompt_ids(tokenizer, p) for p in task.problems("test", count)]


# Greedy: equal to model.generate(do_sample=False)

@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("block_size", [1, 2, 5, 16])
@pytest.mark.exactness
def test_random_models_equal_generate(arch, block_size):
    model = random_model(arch)
    for prompt in PROMPTS:
        reference = generate(model, prompt, do_sample=False, max_new_tokens=40)
        assert generate(model, prompt, custom_generate=jacobi_generate, block_size=block_size,
                        max_new_tokens=40) == reference


@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.exactness
def test_multiblock_equals_generate(arch):
    model = random_model(arch, eos=())
    for prompt in PROMPTS:
        reference = generate(model, prompt, do_sample=False, max_new_tokens=40)
        for blocks, pool_size in [(2, 4), (3, 0), (1, 4)]:
            assert generate(model, prompt, custom_generate=jacobi_generate, block_size=8, blocks=blocks,
                            spawn_ratio=0.5, pool_size=pool_size, max_new_tokens=40) == reference


@pytest.mark.parametrize("name", EMBEDDED)
@pytest.mark.exactness
def test_embedded_models_equal_generate(name):
    model, tokenizer = embedded(name)
    for ids in problem_ids(tokenizer, 3):
        reference = generate(model, ids, do_sample=False, max_new_tokens=96)
        assert generate(model, ids, custom_generate=jacobi_generate, block_size=16, max_new_tokens=96) == reference
        assert generate(model, ids, custom_generate=jacobi_generate, block_size=16, blocks=2, pool_size=4,
                        max_new_tokens=96) == reference


def test_logits_processors_apply_per_position():
    """Greedy with a repetition penalty and no repeated 3-grams: each position's own prefix counts."""
    model = random_model(eos=())
    options = dict(repetition_penalty=1.3, no_repeat_ngram_size=3, max_new_tokens=40)
    for prompt in PROMPTS:
        reference = generate(model, prompt, do_sample=False, **options)
        for block_size, blocks in [(4, 1), (16, 1), (8, 2)]:
            assert generate(model, prompt, custom_generate=jacobi_generate, block_size=block_size, blocks=blocks,
                            **options) == reference


def first_new_tokens(tokens: list[int], count: int) -> list[int]:
    """Tokens of a free run that first appear at position 5 or later: EOS ids that stop it mid-output."""
    return [t for k, t in enumerate(tokens) if k >= 5 and t not in tokens[:k]][:count]


@pytest.mark.parametrize("form", ["int", "list", "tensor"])
def test_eos_as_int_list_or_tensor(form):
    model = random_model(eos=())
    prompt = PROMPTS[0]
    free = generate(model, prompt, do_sample=False, max_new_tokens=40)
    candidates = first_new_tokens(free, 6)
    for first, second in zip(candidates[0::2], candidates[1::2]):
        eos = {"int": first, "list": [second, first], "tensor": torch.tensor([second, first])}[form]
        reference = generate(model, prompt, do_sample=False, max_new_tokens=40, eos_token_id=eos)
        assert len(reference) < 40
        for block_size in (3, 16):
            assert generate(model, prompt, custom_generate=jacobi_generate, block_size=block_size, max_new_tokens=40,
                            eos_token_id=eos) == reference


def test_max_length_instead_of_max_new_tokens():
    model = random_model(eos=())
    for prompt in PROMPTS:
        for new in (1, 7, 23):
            reference = generate(model, prompt, do_sample=False, max_length=len(prompt) + new)
            assert len(reference) == new
            assert generate(model, prompt, custom_generate=jacobi_generate, block_size=5,
                            max_length=len(prompt) + new) == reference


def test_stop_strings():
    """generate's stop_strings= (with tokenizer=) and jacobi_generate with the same StopStringCriteria."""
    model, tokenizer = embedded("base")
    for ids in problem_ids(tokenizer, 2):
        free = generate(model, ids, do_sample=False, max_new_tokens=400)
        for stop in (" = ", "\n", "."):
            reference = generate(model, ids, do_sample=False, max_new_tokens=400, stop_strings=[stop], tokenizer=tokenizer)
            assert stop in tokenizer.decode(reference) and len(reference) < len(free)
            criteria = StoppingCriteriaList([StopStringCriteria(tokenizer, [stop])])
            for blocks in (1, 2):
                assert generate(model, ids, custom_generate=jacobi_generate, block_size=16, blocks=blocks,
                                max_new_tokens=400, stopping_criteria=criteria) == reference


def test_transformers_hands_a_callable_no_streamer_tokenizer_or_assistant():
    """Why docs/usage.md binds the streamer with partial and passes StopStringCriteria, and why jacobi_generate reads
    assistant_model and streamer from generate's frame to refuse them (transformers 5.23). If this fails, generate
    now forwards them: simplify those examples and generate.generate_arguments."""
    model, tokenizer = embedded("base")
    ids = torch.tensor([problem_ids(tokenizer, 1)[0]])
    seen = {}

    def spy(model, input_ids, logits_processor, stopping_criteria, generation_config, streamer=None,
            assistant_model=None, **kwargs):
        seen.update(streamer=streamer, assistant_model=assistant_model, **kwargs)
        return input_ids

    model.generate(ids, streamer=Recorder(), assistant_model=model, custom_generate=spy, max_new_tokens=4)
    assert seen["streamer"] is None and seen["assistant_model"] is None and "tokenizer" not in seen
    with pytest.raises(ValueError, match="tokenizer"):
        model.generate(ids, stop_strings=["."], tokenizer=tokenizer, custom_generate=jacobi_generate, max_new_tokens=4)


class Recorder(BaseStreamer):
    def __init__(self):
        self.puts, self.ends = [], 0

    def put(self, value):
        self.puts.append(value.reshape(-1).tolist())

    def end(self):
        self.ends += 1


@pytest.mark.parametrize("blocks", [1, 2])
def test_streamer_gets_each_verified_chunk(blocks):
    model = random_model(eos=())
    prompt = PROMPTS[0]
    recorder = Recorder()
    out = model.generate(torch.tensor([prompt]), streamer=recorder, max_new_tokens=40, block_size=8, blocks=blocks,
                         custom_generate=partial(jacobi_generate, streamer=recorder), return_dict_in_generate=True)
    assert recorder.puts[0] == prompt and recorder.ends == 1  # generate puts the prompt itself
    assert [t for chunk in recorder.puts[1:] for t in chunk] == out.sequences[0, len(prompt):].tolist()
    assert [len(chunk) for chunk in recorder.puts[1:]] == [1] + out.accepted  # the prefill's token, then each forward


def test_text_streamers(capsys):
    """TextStreamer prints what it prints under generate's own loop; TextIteratorStreamer yields the decoded text."""
    model, tokenizer = embedded("jacobi-forcing")
    ids = torch.tensor([problem_ids(tokenizer, 1)[0]])
    options = dict(attention_mask=torch.ones_like(ids), max_new_tokens=64)
    printer = TextStreamer(tokenizer, skip_prompt=True)
    model.generate(ids, do_sample=False, streamer=printer, **options)
    reference = capsys.readouterr().out
    printer = TextStreamer(tokenizer, skip_prompt=True)
    out = model.generate(ids, streamer=printer, custom_generate=partial(jacobi_generate, streamer=printer), **options)
    assert capsys.readouterr().out == reference == tokenizer.decode(out[0, ids.shape[1]:]) + "\n"

    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True)
    result = {}
    thread = threading.Thread(target=lambda: result.update(out=model.generate(
        ids, streamer=streamer, custom_generate=partial(jacobi_generate, streamer=streamer), **options)))
    thread.start()
    text = "".join(streamer)
    thread.join()
    assert text == tokenizer.decode(result["out"][0, ids.shape[1]:])


def test_return_dict_carries_the_statistics():
    model = random_model(eos=())
    prompt = PROMPTS[0]
    out = model.generate(torch.tensor([prompt]), custom_generate=jacobi_generate, block_size=8, max_new_tokens=40,
                         return_dict_in_generate=True)
    direct = jacobi_decode(model, prompt, 8, 40, eos_token_id=[])
    assert isinstance(out, JacobiGenerateOutput)
    assert out.sequences[0].tolist() == prompt + direct.tokens
    assert out.accepted == direct.accepted and out.forwards == direct.forwards and out.tpf == direct.tpf


def test_what_is_not_supported_says_so():
    model = random_model()
    ids = torch.tensor([PROMPTS[0], PROMPTS[0]])
    with pytest.raises(ValueError, match="batch size 1"):
        model.generate(ids, custom_generate=jacobi_generate, max_new_tokens=8)
    with pytest.raises(ValueError, match="padding"):
        model.generate(ids[:1], attention_mask=torch.tensor([[0] + [1] * 6]), custom_generate=jacobi_generate,
                       max_new_tokens=8)
    with pytest.raises(ValueError, match="beam"):
        model.generate(ids[:1], num_beams=2, custom_generate=jacobi_generate, max_new_tokens=8)
    with pytest.raises(ValueError, match="output_scores"):
        model.generate(ids[:1], return_dict_in_generate=True, output_scores=True, custom_generate=jacobi_generate,
                       max_new_tokens=8)


@pytest.mark.parametrize("kwargs, name", [
    (dict(num_beams=2), "num_beams"),
    (dict(do_sample=True, num_return_sequences=2), "num_return_sequences"),
    (dict(prompt_lookup_num_tokens=3), "prompt_lookup_num_tokens"),
    (dict(assistant_early_exit=1), "assistant_early_exit"),
    (dict(use_mtp=True), "use_mtp"),
    (dict(constraints=[]), "constraints"),
    (dict(force_words_ids=[[5]]), "force_words_ids"),
    (dict(penalty_alpha=0.6, top_k=4), "penalty_alpha"),
    (dict(dola_layers="high"), "dola_layers"),
    (dict(cache_implementation="static"), "cache_implementation"),
    (dict(guidance_scale=1.5), "guidance_scale"),
    (dict(watermarking_config=SynthIDTextWatermarkingConfig(keys=[1, 2, 3], ngram_len=3)), "watermarking_config"),
    (dict(assistant_model=random_model()), "assistant_model"),  # found in generate's frame (test above)
])
@pytest.mark.parametrize("way", [dict(custom_generate=jacobi_generate),
                                 dict(custom_generate=FOLDER, trust_remote_code=True)], ids=["callable", "folder"])
def test_an_argument_generate_would_use_and_this_loop_cannot_is_refused(kwargs, name, way):
    """Each of generate.REFUSED, and the two stateful logits processors: a ValueError that names the argument, the
    callable's and the folder's (one check). Without it, generate runs the loop greedily, the argument ignored."""
    with pytest.raises(ValueError, match=f"cannot take {name}"):
        generate(random_model(), PROMPTS[0], max_new_tokens=8, **way, **kwargs)


def test_what_never_reaches_the_loop():
    """A streamer given to generate alone (it would get the prompt only; found in generate's frame) is refused, and
    so is cache_implementation="paged" by the folder: generate runs its continuous batching instead of any loop."""
    with pytest.raises(ValueError, match="bind it as well"):
        generate(random_model(), PROMPTS[0], custom_generate=jacobi_generate, streamer=Recorder(), max_new_tokens=8)
    with pytest.raises(ValueError, match="cannot take cache_implementation"):
        generate(random_model(), PROMPTS[0], custom_generate=FOLDER, trust_remote_code=True, max_new_tokens=8,
                 cache_implementation="paged")


PROCESSORS = [  # logits processors of the position's prefix, each of which changes the greedy output here
    dict(min_new_tokens=5, eos_token_id=27), dict(forced_eos_token_id=5), dict(sequence_bias={(27,): -10.0}),
    dict(exponential_decay_length_penalty=(5, 1.5), eos_token_id=8), dict(encoder_no_repeat_ngram_size=1),
    dict(suppress_tokens=[27, 21], begin_suppress_tokens=[8]), dict(bad_words_ids=[[33, 33], [26, 40]]),
    dict(watermarking_config=WatermarkingConfig(bias=5.0)),  # re-seeded from the prefix on every call
]


@pytest.mark.parametrize("kwargs", PROCESSORS + [dict(max_time=60.0), dict(use_cache=False), dict(prefill_chunk_size=2),
                                    dict(cache_implementation="dynamic")], ids=lambda kwargs: next(iter(kwargs)))
@pytest.mark.exactness
def test_what_is_honoured_equals_generate(kwargs):
    """The GenerationConfig fields jacobi_generate keeps: the logits processors that are functions of the prefix, a
    stopping criterion (max_time), and how the forward is computed."""
    model = random_model(eos=())
    for prompt in PROMPTS:
        reference = generate(model, prompt, do_sample=False, max_new_tokens=30, **kwargs)
        assert generate(model, prompt, custom_generate=jacobi_generate, block_size=8, max_new_tokens=30,
                        **kwargs) == reference
        assert kwargs not in PROCESSORS or reference != generate(model, prompt, do_sample=False, max_new_tokens=30)


def test_past_the_context_generate_goes_on_and_jacobi_generate_raises():
    """The one documented difference (generate.py): where prompt + max_new_tokens passes max_position_embeddings,
    generate warns and computes the positions past it, jacobi_generate raises as every decoder here does; up to
    the limit both give the same tokens."""
    model = tiny_model(eos=[])
    model.config.max_position_embeddings = len(PROMPTS[0]) + 24
    reference = generate(model, PROMPTS[0], do_sample=False, max_new_tokens=40)
    assert len(reference) == 40  # generate went 16 tokens past the limit
    with pytest.raises(ValueError, match="exceeds the model's context of 31 tokens"):
        generate(model, PROMPTS[0], custom_generate=jacobi_generate, max_new_tokens=40)
    assert generate(model, PROMPTS[0], custom_generate=jacobi_generate, max_new_tokens=24) == reference[:24]


# Sampling: position-keyed Gumbel noise makes Jacobi sampling equal to the AR sampler

def reference_sampler(model, prompt: list[int], max_new_tokens: int, processors, seed: int, eos=()) -> list[int]:
    """The trusted AR sampler: a full forward per token (no cache), y_t = argmax(processors(logits) + g_t)."""
    sequence = list(prompt)
    while len(sequence) < len(prompt) + max_new_tokens:
        ids = torch.tensor([sequence])
        with torch.no_grad():
            scores = processors(ids, model(ids).logits[:, -1].float())  # (1, V)
        sequence.append(int((scores.double() + gumbel(seed, len(sequence), scores.shape[-1])).argmax()))
        if sequence[-1] in eos:
            break
    return sequence[len(prompt):]


def warpers(temperature: float, top_k: int, top_p: float) -> LogitsProcessorList:
    chosen = [TemperatureLogitsWarper(temperature)] if temperature != 1 else []
    chosen += [TopKLogitsWarper(top_k)] if top_k else []
    return LogitsProcessorList(chosen + ([TopPLogitsWarper(top_p)] if top_p < 1 else []))


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 1.0), (0.7, 0, 1.0), (1.5, 8, 1.0), (1.0, 0, 0.8),
                                                     (0.5, 5, 0.9)])
@pytest.mark.exactness
def test_jacobi_sampling_equals_ar_sampler(temperature, top_k, top_p):
    model = random_model(eos=())
    prompt = PROMPTS[0]
    for seed in range(3):
        pick = sampler(temperature, top_k, top_p, seed)
        ar = greedy_decode(model, prompt, 40, pick=pick).tokens
        assert ar == reference_sampler(model, prompt, 40, warpers(temperature, top_k, top_p), seed)
        for block_size in (2, 8, 16):
            assert jacobi_decode(model, prompt, block_size, 40, pick=pick, seed=seed).tokens == ar
        for blocks, pool_size in [(2, 4), (3, 2)]:
            assert multiblock_decode(model, prompt, 8, 40, blocks, 0.5, pool_size, pick=pick).tokens == ar


@pytest.mark.exactness
def test_embedded_model_sampling_equals_ar_sampler():
    """A trained model accepts several sampled tokens per forward; they are still the AR sampler's."""
    model, tokenizer = embedded("jacobi-forcing")
    committed = forwards = 0
    for ids in problem_ids(tokenizer, 3):
        for temperature, seed in [(0.5, 0), (1.0, 1)]:
            pick = sampler(temperature, seed=seed)
            ar = greedy_decode(model, ids, 96, pick=pick).tokens
            jacobi = jacobi_decode(model, ids, 16, 96, pick=pick)
            assert jacobi.tokens == ar
            assert multiblock_decode(model, ids, 16, 96, blocks=2, pool_size=4, pick=pick).tokens == ar
            committed, forwards = committed + sum(jacobi.accepted), forwards + jacobi.forwards
    assert committed > forwards  # some forwards committed more than one sampled token


@pytest.mark.exactness
def test_generate_sampling_equals_ar_sampler():
    """do_sample=True through generate: the processors generate builds, plus the noise of `seed`."""
    model = random_model()
    for prompt in PROMPTS:
        for seed in (0, 5):
            ar = greedy_decode(model, prompt, 40, pick=sampler(0.8, 10, 0.9, seed)).tokens
            for block_size, blocks in [(1, 1), (6, 1), (16, 1), (8, 2)]:
                assert generate(model, prompt, custom_generate=jacobi_generate, do_sample=True, temperature=0.8,
                                top_k=10, top_p=0.9, seed=seed, block_size=block_size, blocks=blocks,
                                max_new_tokens=40) == ar
    torch.manual_seed(0)
    first = generate(model, PROMPTS[0], custom_generate=jacobi_generate, do_sample=True, max_new_tokens=40)
    torch.manual_seed(0)
    assert generate(model, PROMPTS[0], custom_generate=jacobi_generate, do_sample=True, max_new_tokens=40) == first


def test_a_sampler_without_a_seed_draws_one():
    """sampler(seed=None) samples with a seed drawn once from torch's generator (the Decision in `sampler`): not
    greedy, another sample on every call, the same after torch.manual_seed, and a fixed point like any seed's."""
    model = random_model(eos=())
    torch.manual_seed(0)
    first, second = sampler(1.5, seed=None), sampler(1.5, seed=None)
    torch.manual_seed(0)
    assert sampler(1.5, seed=None).seed == first.seed != second.seed
    samples = [greedy_decode(model, PROMPTS[0], 24, pick=pick).tokens for pick in (first, second)]
    assert greedy_decode(model, PROMPTS[0], 24).tokens not in samples and samples[0] != samples[1]
    assert jacobi_decode(model, PROMPTS[0], 8, 24, pick=first).tokens == samples[0]
    assert greedy_decode(model, PROMPTS[0], 24, pick=sampler(1.5, seed=first.seed)).tokens == samples[0]
    for bad in (-1, 1.5, "7"):
        with pytest.raises(ValueError, match="seed must be an integer >= 0"):
            sampler(seed=bad)


@pytest.mark.parametrize("arch", ["qwen2-gqa-tied", "llama-gqa-untied"])
def test_tiny_temperature_is_greedy(arch):
    model = random_model(arch, eos=())
    for prompt in PROMPTS:
        reference = generate(model, prompt, do_sample=False, max_new_tokens=40)
        for seed in range(3):
            assert generate(model, prompt, custom_generate=jacobi_generate, do_sample=True, temperature=1e-4,
                            seed=seed, block_size=8, max_new_tokens=40) == reference


class FixedLogits(torch.nn.Module):
    """A mock LM whose next-token logits are the same after any prefix."""

    def __init__(self, logits: torch.Tensor):
        super().__init__()
        self.logits = logits
        self.config = Qwen2Config(vocab_size=len(logits), max_position_embeddings=64, num_hidden_layers=1)
        self.generation_config = SimpleNamespace(eos_token_id=None)

    @property
    def device(self):
        return torch.device("cpu")

    def forward(self, input_ids, past_key_values, use_cache=True):
        state = torch.zeros(1, 1, input_ids.shape[1], 1)
        past_key_values.update(state, state, layer_idx=0)
        return SimpleNamespace(logits=self.logits.expand(*input_ids.shape, -1))


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def test_ar_sampler_frequencies_match_the_softmax():
    """4000 seeds, one position: the counts of softmax(top-6 of logits / 0.7) pass a chi-square test."""
    logits = torch.tensor([2.0, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -1.5])
    model = FixedLogits(logits)
    counts = torch.zeros(8)
    for seed in range(4000):
        counts[greedy_decode(model, [1, 2], 1, pick=sampler(0.7, top_k=6, seed=seed)).tokens[0]] += 1
    assert counts[6:].sum() == 0  # outside the top 6
    # 20.515 is the 0.999 quantile of chi-square with 6 - 1 = 5 degrees of freedom
    assert chi_square(counts[:6], torch.softmax(logits[:6] / 0.7, -1)) < 20.515
    assert chi_square(counts, torch.softmax(logits, -1)) > 20.515 * 10  # the untempered softmax is rejected



def test_top_p_samples_the_hand_computed_nucleus():
    """p = (0.5, 0.2, 0.15, 0.1, 0.05), top_p = 0.75: the nucleus is the smallest top set holding 0.75 of the mass,
    {0, 1, 2} (0.5 + 0.2 = 0.7 falls short); every token sampled is in it, and each of the three is sampled."""
    model = FixedLogits(torch.tensor([0.5, 0.2, 0.15, 0.1, 0.05]).log())
    drawn = {greedy_decode(model, [1], 1, pick=sampler(top_p=0.75, seed=seed)).tokens[0] for seed in range(300)}
    assert drawn == {0, 1, 2}


@pytest.mark.parametrize("settings", [dict(top_k=1), dict(top_p=1e-9), dict(temperature=1.5, top_k=1)])
def test_a_one_token_nucleus_is_greedy(settings):
    """top_k = 1, or top_p close to 0, leaves only the argmax: every seed gives the greedy tokens."""
    model = random_model(eos=())
    greedy = greedy_decode(model, PROMPTS[0], 20).tokens
    for seed in range(2):
        pick = sampler(seed=seed, **settings)
        assert greedy_decode(model, PROMPTS[0], 20, pick=pick).tokens == greedy
        assert jacobi_decode(model, PROMPTS[0], 8, 20, pick=pick).tokens == greedy


# The `python -m jacobi_min generate` command

def test_command_streams_the_text_then_the_statistics(capsys):
    model, tokenizer = embedded("jacobi-forcing")
    text = task.problems("test", 1)[0].prompt
    ids = tokenizer(text)["input_ids"]
    main(["generate", text, "--max-new-tokens", "48", "--compare"])
    out = capsys.readouterr().out
    result = jacobi_decode(model, ids, 16, 48)
    streamed, stats = out.rsplit("\n", 2)[:2]
    assert streamed == tokenizer.decode(result.tokens, skip_special_tokens=True) and "\033[" not in out
    jacobi, ar = stats.split(" | ")[:2]
    assert jacobi.startswith("Jacobi (n = 16, K = 1, pool 0): ")
    assert f"tokens {len(result.tokens)} · forwards {result.forwards} · TPF {result.tpf:.2f} · " in jacobi
    assert ar.startswith(f"AR: tokens {len(result.tokens)} · forwards {len(result.tokens) - 1} · TPF 1.00 · ")
    assert "same tokens: yes" in stats and re.search(r"speedup \d+\.\d\dx", stats)


def test_command_reads_stdin_and_samples(capsys, monkeypatch):
    model, tokenizer = embedded("base")
    text = task.problems("test", 1)[0].prompt
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    main(["generate", "--model", "base", "--temperature", "0.8", "--top-p", "0.9", "--seed", "1", "--blocks", "2",
          "--pool-size", "4", "--max-new-tokens", "32"])
    ar = greedy_decode(model, tokenizer(text)["input_ids"], 32, pick=sampler(0.8, top_p=0.9, seed=1))
    assert capsys.readouterr().out.startswith(tokenizer.decode(ar.tokens, skip_special_tokens=True) + "\n")


def test_command_colours_each_forward(capsys):
    model, tokenizer = embedded("jacobi-forcing")
    ids = problem_ids(tokenizer, 1)[0]
    result = run(model, tokenizer, ids, Pick(), max_new_tokens=48, color=True)
    out = capsys.readouterr().out
    assert COLORS[0] in out and COLORS[1] in out and out.count("\033[0m") <= result.forwards + 1
    assert re.sub(r"\033\[\d+m", "", out).startswith(tokenizer.decode(result.tokens, skip_special_tokens=True))


@pytest.mark.parametrize("bad", [["--block-size", "0"], ["--blocks", "0"], ["--pool-size", "-1"],
                                 ["--temperature", "-0.5"], ["--top-k", "-1"], ["--top-p", "0"], ["--top-p", "1.5"],
                                 ["--max-new-tokens", "0"], ["--seed", "x"]])
def test_command_rejects_bad_arguments(bad, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["generate", "a prompt", *bad])
    assert exit_.value.code == 2 and bad[0] in capsys.readouterr().err


def test_command_chat_needs_a_chat_template():
    with pytest.raises(SystemExit, match="chat template"):
        main(["generate", "a prompt", "--model", "base", "--chat"])


def command_output(capsys, *args: str) -> tuple[str, str]:
    """(stdout, stderr) of `python -m jacobi_min generate …`, the clock's readings left out."""
    main(["generate", *args])
    captured = capsys.readouterr()
    return re.sub(r"[\d.]+ tokens/s", "… tokens/s", captured.out), captured.err


def test_command_puts_a_plain_question_in_the_embedded_format(capsys):
    problem = task.problems("test", 1)[0]
    plain, _ = command_output(capsys, problem.question, "--max-new-tokens", "40")
    formatted, _ = command_output(capsys, problem.prompt, "--max-new-tokens", "40")
    raw, _ = command_output(capsys, problem.question, "--max-new-tokens", "40", "--raw")
    assert plain == formatted and plain.startswith(" ") and raw.split("\n")[0] != plain.split("\n")[0]


def test_command_says_why_it_stopped_never_nan(capsys):
    question = task.problems("test", 1)[0].question
    cut, _ = command_output(capsys, question, "--max-new-tokens", "20", "--compare")
    assert cut.count("cut at the 20-token limit (raise --max-new-tokens)") == 2  # Jacobi's and AR's
    prefill, _ = command_output(capsys, question, "--max-new-tokens", "1", "--compare")
    assert "tokens 1 · the answer ended in the prefill (the 1-token limit): no decoding forward" in prefill
    assert "speedup n/a" in prefill and "nan" not in prefill + cut


def test_an_answer_that_is_eos_ends_in_the_prefill(capsys):
    _, tokenizer = embedded("base")
    first = greedy_decode(random_model(eos=()), PROMPTS[0], 1).tokens[0]
    run(random_model(eos=first), tokenizer, PROMPTS[0], Pick(), max_new_tokens=30, compare=True)
    out = capsys.readouterr().out
    assert "tokens 1 · the answer ended in the prefill (EOS): no decoding forward, no TPF" in out and "nan" not in out


def test_the_embedded_tokenizer_knows_every_training_word():
    """Every word of the training problems is one token (the merges ran out below the vocabulary cap), which
    is what `unseen_words` relies on; a name outside the task's list is split, so it is named."""
    _, tokenizer = embedded("base")
    assert len(tokenizer) < tiny.BaseConfig.vocab_size
    for p in task.problems("train", 200):
        assert unseen_words(tokenizer, p.prompt + p.completion) == []
    question = task.format_prompt("Xerxes has 5 apples. Xerxes gives 2 apples to Zebulon. How many apples does Xerxes have?")
    assert unseen_words(tokenizer, question) == ["Xerxes", "Zebulon"]


def test_command_names_the_words_the_model_never_saw(capsys):
    _, note = command_output(capsys, "Xerxes has 5 apples. Xerxes gives 2 apples to Mia. How many apples does "
                                     "Xerxes have now?", "--max-new-tokens", "8")
    assert "never saw 'Xerxes' in training" in note and "Mia'" not in note


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_an_empty_prompt_is_a_usage_error(prompt, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", prompt])
    assert exit_info.value.code == 2 and "the prompt is empty" in capsys.readouterr().err
