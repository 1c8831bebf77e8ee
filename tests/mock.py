"""A mock causal LM whose greedy output is known: the token at position q is q + 1.

Its prediction ignores the tokens and depends only on the position (taken from
the KV cache length, like a real model), so the Jacobi control flow is exact:
drafted tokens are wrong until one forward has seen their positions, then right.
"""
from types import SimpleNamespace

import torch
from transformers import DynamicCache, Qwen2Config


class PositionModel(torch.nn.Module):
    def __init__(self, vocab: int = 512, context: int = 400, eos=None):
        super().__init__()
        self.config = Qwen2Config(vocab_size=vocab, max_position_embeddings=context, num_hidden_layers=1)
        self.generation_config = SimpleNamespace(eos_token_id=eos)
        self.dummy = torch.nn.Parameter(torch.zeros(1))
        self.forwards = 0

    @property
    def device(self):
        return self.dummy.device

    def forward(self, input_ids, past_key_values: DynamicCache, use_cache=True):
        self.forwards += 1
        batch, length = input_ids.shape
        past = past_key_values.get_seq_length()
        state = torch.zeros(batch, 1, length, 1)
        past_key_values.update(state, state, layer_idx=0)  # keep the cache length in step
        positions = torch.arange(past, past + length)
        logits = torch.zeros(batch, length, self.config.vocab_size)
        logits[:, torch.arange(length), positions + 2] = 1.0  # position i predicts token i + 2 at i + 1
        return SimpleNamespace(logits=logits)
