"""Jacobi decoding as a transformers `custom_generate` method (the folder path).

    out = model.generate(**inputs, custom_generate="hub/jacobi-decoding", trust_remote_code=True, block_size=16)

transformers hands a `custom_generate` *folder* every argument of `generate`
(streamer, tokenizer and stop strings included), where a callable
`custom_generate` only gets the ones `generate` does not know. This function
adds what the callable cannot see, then runs `jacobi_min.jacobi_generate`
inside `generate`'s own preparation (generation config, logits processors,
stopping criteria):

- `stop_strings` (with `tokenizer=`) become a `StopStringCriteria`;
- the `streamer` gets the prompt from `generate`, then each verified chunk.

The tokens are `generate(do_sample=False)`'s, token for token; with
`do_sample=True`, those of the position-keyed AR sampler for `seed`.
"""
import copy
from functools import partial

from transformers import StoppingCriteriaList, StopStringCriteria

from jacobi_min import jacobi_generate
from jacobi_min.generate import check_arguments


def check_supported(generation_config, assistant_model, kwargs: dict) -> None:
    """jacobi_generate's ValueError for an argument it cannot take (`REFUSED`), raised before generate runs:
    generate words some of them its own way (num_return_sequences without sampling) and with
    cache_implementation="paged" never calls the loop. Batches and padding: jacobi_generate."""
    config = {} if generation_config is None else vars(generation_config)
    check_arguments({**config, **kwargs, "assistant_model": assistant_model})


def stop_string_criteria(stopping_criteria, stop_strings, tokenizer) -> StoppingCriteriaList:
    """The caller's stopping criteria, plus one for the stop strings."""
    criteria = StoppingCriteriaList(stopping_criteria or [])
    if stop_strings:
        if tokenizer is None:
            raise ValueError("stop_strings needs the model's tokenizer: pass tokenizer= to generate")
        criteria.append(StopStringCriteria(tokenizer, stop_strings))
    return criteria


def generate(model, inputs=None, generation_config=None, logits_processor=None, stopping_criteria=None,
             streamer=None, assistant_model=None, *, block_size: int = 16, blocks: int = 1,
             spawn_ratio: float = 0.85, pool_size: int = 0, seed: int | None = None, **kwargs):
    """`model.generate`'s arguments, plus Jacobi decoding's: block_size (n), blocks (K blocks in flight,
    spawned at ratio spawn_ratio), pool_size (rejection recycling) and seed (the sampler's, with do_sample)."""
    check_supported(generation_config, assistant_model, kwargs)
    stop_strings = kwargs.pop("stop_strings", None) or getattr(generation_config, "stop_strings", None)
    criteria = stop_string_criteria(stopping_criteria, stop_strings, kwargs.pop("tokenizer", None))
    if generation_config is not None and generation_config.stop_strings:
        generation_config = copy.deepcopy(generation_config)
        generation_config.stop_strings = None
    loop = partial(jacobi_generate, streamer=streamer, block_size=block_size, blocks=blocks,
                   spawn_ratio=spawn_ratio, pool_size=pool_size, seed=seed)
    return model.generate(inputs, generation_config=generation_config, logits_processor=logits_processor,
                          stopping_criteria=criteria, streamer=streamer, custom_generate=loop, **kwargs)
