"""Speculative decoding with a draft model: the paper's other family, lossless but a second model.

A drafter q proposes k tokens, one forward each; the target p scores them all in one forward and
keeps the longest prefix where every draft token is p's argmax, then p's own next token (at the
first disagreement, or after the k-th). Greedy, the output is p's greedy output whatever q is
(Leviathan et al. 2023, Chen et al. 2023). transformers runs it: `generate(…, assistant_model=q,
do_sample=False)`. `Speculative` fixes the draft length (num_assistant_tokens = k, schedule
"constant", assistant_confidence_threshold 0: no early stop of a draft) and counts the forwards of
both models (`ForwardCounter`); tokens per target forward is the TPF of the other decoders
(`generate_result`, which bench's prompt-lookup row uses too: the first target forward, prompt and
first drafts together, counts as the prefill).

The drafter (`build_drafter`): the base's embeddings, its first two layers and final norm, as a
Qwen2 of its own on the same tokenizer (tied head). Decision: two layers, not one: the answers copy
names, items and the last result from earlier text, and copying the token that followed an earlier
occurrence takes two layers (an induction head, Olsson et al. 2022). Decision: the base's lower
layers to start from (a truncated target, as self-speculative drafts are), not a random init: the
base needed about 80 minutes to learn the task from scratch; the drafter's budget is 20.

Training (`train_drafter`): sequence-level distillation (Kim & Rush 2016) on the base's own greedy
answers to the training problems (`training.greedy_answers`):

    L = - mean_t log q(a_t | x, a_<t)        over the answer's tokens, EOS included

Decision: the answer only (from the bridge pair, the prompt's last token → a_0; `packing.ar_labels`
with on_prompt=False): the drafter only ever drafts answers, and the questions' random names and
numbers would spend its capacity on what it is never asked.
"""
import copy
from dataclasses import dataclass

import torch

from ..jacobi import DecodeResult
from ..losses import ar_loss
from ..packing import collate, pack
from ..train import length_groups
from ..utils import as_int, check_inputs
from ..tools import task
from .training import Recipe, draw, fit, greedy_answers, starting_model


@dataclass
class DrafterConfig(Recipe):
    """The drafter's pre-registered recipe (and Recipe's common part)."""
    layers: int = 2
    steps: int = 800
    batch_size: int = 16  # answers a step


def build_drafter(base, layers: int = 2):
    """A Qwen2 of `layers` layers: the base's embeddings, first `layers` layers and final norm."""
    config = copy.deepcopy(base.config)
    config.num_hidden_layers, config.layer_types = layers, config.layer_types[:layers]
    drafter = type(base)(config).to(base.dtype)
    own = drafter.state_dict()
    drafter.load_state_dict({name: weight for name, weight in base.state_dict().items() if name in own})
    drafter.generation_config = copy.deepcopy(base.generation_config)
    return drafter.to(base.device).eval()


class ForwardCounter:
    """Counts a model's forward calls (for `generate`, whose loop we do not own)."""

    def __init__(self, model):
        self.count = 0
        model.register_forward_pre_hook(self._hook)

    def _hook(self, module, args):
        self.count += 1


def generate_result(model, counter: ForwardCounter, ids: list[int], max_new_tokens: int, **kwargs) -> DecodeResult:
    """transformers' greedy `generate` (optionally with prompt lookup) as a DecodeResult.

    Only the number of forwards is known, so `accepted` spreads the tokens evenly over them.
    """
    x = torch.tensor([ids], device=model.device)
    before = counter.count
    out = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=max_new_tokens,
                         pad_token_id=model.generation_config.pad_token_id, **kwargs)
    tokens = out[0, len(ids):].tolist()
    forwards = counter.count - before - 1  # the prefill is not a decoding forward
    return DecodeResult(tokens, accepted=[(len(tokens) - 1) / max(forwards, 1)] * forwards)


class Speculative:
    """Greedy assisted generation of `model` with `drafter`; `drafts.count` counts the drafter's forwards."""

    def __init__(self, model, drafter):
        self.model, self.drafter = model, drafter
        self.target, self.drafts = ForwardCounter(model), ForwardCounter(drafter)

    def __call__(self, input_ids, max_new_tokens: int = 256, draft_tokens: int = 4) -> DecodeResult:
        """The target's greedy output with k = `draft_tokens` drafts a round; `accepted` spreads the
        tokens evenly over the target's decoding forwards."""
        prompt = check_inputs(self.model, input_ids, max_new_tokens)
        self.drafter.generation_config.update(num_assistant_tokens=as_int(draft_tokens, "draft_tokens", 1),
                                              num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0)
        return generate_result(self.model, self.target, prompt, max_new_tokens, assistant_model=self.drafter)


def drafter_batch(trajectories: list[dict], eos: int, pad_id: int) -> dict:
    """Prompt + answer, causal, with next-token targets on the answer (packed without noisy blocks)."""
    packed = [pack(t["prompt"], [None] * len(t["blocks"]), [s[-1] for s in t["blocks"]], {eos}, pad_id,
                   ar_on_prompt=False) for t in trajectories]
    batch = collate(packed, pad_id)
    return {k: batch[k] for k in ("input_ids", "position_ids", "attention_mask", "labels")}


def drafter_loss(model, batch: dict):
    logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                   attention_mask=batch["attention_mask"].to(model.dtype)).logits
    return ar_loss(logits, batch["labels"])


def train_drafter(base, out_dir, cfg: DrafterConfig = DrafterConfig(), progress: bool = True) -> list[dict]:
    """Distil `base` (a name, a directory or a (model, tokenizer) pair) into a drafter; saved to out_dir."""
    model, tokenizer = starting_model(base)
    data = greedy_answers(model, tokenizer, task.problems("train", cfg.problems, seed=cfg.seed), 16, progress=progress)
    drafter, groups = build_drafter(model, cfg.layers), length_groups(data)
    batches = lambda rng: drafter_batch(draw(groups, cfg.batch_size, rng), tokenizer.eos_token_id,
                                        tokenizer.pad_token_id)
    return fit(drafter, tokenizer, batches, drafter_loss, cfg, out_dir, "train drafter", progress)
