"""Jacobi decoding behind transformers' `generate`.

    out = model.generate(input_ids, custom_generate=jacobi_generate, block_size=16, max_new_tokens=256)

transformers 5.x `generate` merges the arguments with the model's generation config, builds the logits
processors and the stopping criteria, then hands them to a callable `custom_generate` in place of its own
loop: here `jacobi_decode` (`multiblock_decode` with blocks > 1 or a recycling pool), so the output is
generate's greedy output token for token, or with do_sample=True an exact sample (sampling.py). Honoured:

- max_new_tokens / max_length, eos_token_id (int, list or tensor);
- every logits processor, at each position on its own prefix (sampling.Pick); do_sample=True adds
  Gumbel noise keyed by (`seed`, position): the position-seeded AR sampler's tokens, not generate's;
- every stopping criterion, checked on the whole sequence after each new token, so decoding stops
  exactly where generate's loop would (scores are not passed);
- a streamer: `put` once per verified chunk (the prefill's token, then each forward's), then `end`.

Refused with a ValueError naming the argument: batch size > 1, padding, a filled cache, scores / logits /
attentions / hidden states, a streamer given to generate alone, and what generate's loop would do and this
one cannot (`REFUSED`, `STATEFUL`); the rest of GenerationConfig changes nothing returned here. Unseen:
cache_implementation="paged" (generate batches instead of calling any loop; the folder refuses it). The one
difference: past max_position_embeddings generate warns and goes on, this loop raises (utils.check_inputs).

Two ways in (docs/usage.md): the folder `hub/jacobi-decoding`, which generate hands every argument
(`streamer`, `stop_strings` with `tokenizer=`), or this callable, which it hands only what it does not
know: it puts the prompt into `streamer`, then drops it and `tokenizer`, so bind the streamer too,
`partial(jacobi_generate, streamer=s)`, and pass `stopping_criteria=[StopStringCriteria(tokenizer, …)]`.
"""
import traceback
from dataclasses import dataclass

import torch
from transformers import SynthIDTextWatermarkLogitsProcessor, UnbatchedClassifierFreeGuidanceLogitsProcessor
from transformers.generation.utils import GenerateDecoderOnlyOutput, GenerationMixin

from .jacobi import DecodeResult, jacobi_decode
from .multiblock import check_multiblock, multiblock_decode
from .sampling import Pick, fresh_seed

MODEL_KWARGS = {"attention_mask", "position_ids", "past_key_values", "use_cache", "logits_to_keep"}
UNSUPPORTED_OUTPUTS = ("output_scores", "output_logits", "output_attentions", "output_hidden_states")
ASSISTED = "Jacobi decoding drafts its own tokens: assisted decoding cannot be combined with it"
BEAMS = "beam search keeps several sequences, Jacobi decoding one"
REFUSED = {  # generate's (5.23's GenerationConfig's) arguments: (the values that ask for nothing, why others fail)
    "num_beams": ((None, 1), BEAMS), "constraints": ((None,), BEAMS), "force_words_ids": ((None,), BEAMS),
    "num_return_sequences": ((None, 1), "it returns one sequence per prompt: call generate once per seed"),
    "assistant_model": ((None,), ASSISTED), "prompt_lookup_num_tokens": ((None,), ASSISTED),
    "assistant_early_exit": ((None,), ASSISTED), "use_mtp": ((None, False), ASSISTED),
    "penalty_alpha": ((None, 0), "contrastive search rescores the top-k tokens by their hidden states"),
    "dola_layers": ((None,), "DoLa contrasts the last layer's logits with earlier layers'"),
    "cache_implementation": ((None, "dynamic"), "Jacobi decoding crops rejected drafts from its own DynamicCache"),
}
# processors that keep state between calls (one new token per call), where Jacobi decoding scores prefixes again
STATEFUL = {UnbatchedClassifierFreeGuidanceLogitsProcessor: "guidance_scale",
            SynthIDTextWatermarkLogitsProcessor: "watermarking_config"}
GENERATE = GenerationMixin.generate.__wrapped__.__code__  # under torch.no_grad's wrapper


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


def check_arguments(arguments: dict) -> None:
    """A ValueError naming the first of generate's `arguments` (name -> value) in `REFUSED` that asks for something."""
    for name, (nothing, why) in REFUSED.items():
        if arguments.get(name) not in nothing:
            raise ValueError(f"jacobi_generate cannot take {name}: {why}")


def check_loop_arguments(generation_config, logits_processor, streamer) -> None:
    """A ValueError naming what generate was asked for and this loop cannot do (`REFUSED`, `STATEFUL`, a streamer
    given to generate alone). Decision: assistant_model and generate's streamer are read from generate's frame, as
    transformers 5.23 hands a callable neither (test_transformers_hands_a_callable_no_streamer_tokenizer_or_assistant)
    and they would go unheeded. Read only to refuse: should transformers move them, they go unrefused, as before."""
    given = next((frame.f_locals for frame, _ in traceback.walk_stack(None) if frame.f_code is GENERATE), {})
    check_arguments({name: getattr(generation_config, name, None) for name in REFUSED}
                    | {"assistant_model": given.get("assistant_model")})
    if stateful := [STATEFUL[type(p)] for p in logits_processor if type(p) in STATEFUL]:
        raise ValueError(f"jacobi_generate cannot take {stateful[0]}: its logits processor keeps state between calls")
    if given.get("streamer") not in (None, streamer):
        raise ValueError("jacobi_generate is handed no streamer by generate: bind it as well, custom_generate=partial("
                         "jacobi_generate, streamer=streamer), or use the folder hub/jacobi-decoding")


def check_supported(input_ids: torch.Tensor, generation_config, model_kwargs: dict) -> None:
    """A ValueError naming what `jacobi_generate` cannot do with these inputs."""
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
    check_loop_arguments(generation_config, logits_processor, streamer)
    check_supported(input_ids, generation_config, model_kwargs)
    check_multiblock(blocks, spawn_ratio, pool_size)
    prompt = input_ids[0].tolist()
    max_new_tokens = generation_config.max_length - len(prompt)
    eos = generation_config.eos_token_id
    eos = [] if eos is None else torch.as_tensor(eos).reshape(-1).tolist()
    # 2. each position's token: the processors on its own prefix, plus Gumbel noise keyed by (seed, t) when sampling
    if generation_config.do_sample and seed is None:
        seed = fresh_seed()  # torch.manual_seed makes a run repeatable, as with generate
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
