"""Shared fixtures: tiny randomly initialised models of several architectures (no download)."""
import pytest
import torch
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

torch.set_num_threads(1)

ARCHS = {
    "qwen2-gqa-tied": (Qwen2Config, Qwen2ForCausalLM, dict(num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)),
    "qwen2-mha-untied": (Qwen2Config, Qwen2ForCausalLM, dict(num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=False)),
    "qwen3-gqa": (Qwen3Config, Qwen3ForCausalLM, dict(num_attention_heads=4, num_key_value_heads=1, head_dim=16, tie_word_embeddings=True)),
    "llama-gqa-untied": (LlamaConfig, LlamaForCausalLM, dict(num_attention_heads=8, num_key_value_heads=2, tie_word_embeddings=False)),
}


def tiny_model(arch: str = "qwen2-gqa-tied", vocab: int = 64, hidden: int = 32, layers: int = 2,
               eos: int | list[int] = 3, seed: int = 0, init_std: float = 0.5):
    """A random tiny causal LM in float32; a large init makes its greedy output varied."""
    config_cls, model_cls, extra = ARCHS[arch]
    config = config_cls(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                        max_position_embeddings=512, eos_token_id=eos, pad_token_id=0, bos_token_id=None,
                        initializer_range=init_std, **extra)
    torch.manual_seed(seed)
    return model_cls(config).eval()


def generate_greedy(model, prompt: list[int], max_new_tokens: int, eos=None) -> list[int]:
    """The trusted reference: transformers' greedy generate with an explicit all-ones mask."""
    ids = torch.tensor([prompt])
    eos = model.generation_config.eos_token_id if eos is None else eos
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=max_new_tokens,
                         eos_token_id=eos, pad_token_id=0)
    return out[0, len(prompt):].tolist()


@pytest.fixture(scope="session")
def base():
    """The embedded tiny Qwen (float32) and its tokenizer."""
    import jacobi_min
    return jacobi_min.load()
