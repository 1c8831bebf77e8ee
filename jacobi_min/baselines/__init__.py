"""The two families Jacobi Forcing's paper argues against, built on the same tiny base, beside the
method (which never imports them):

- `diffusion`: block diffusion adapted from the AR base (Fast-dLLM v2's recipe): a mask token,
  bidirectional attention inside a block, the KV cache across blocks; fast but not lossless;
- `drafter`: speculative decoding with a two-layer draft model through transformers' assisted
  generation: lossless, but a second model to train and run.

`training` holds what their trainings share: the base's greedy answers and a resumable loop.
"""
from .diffusion import DiffusionConfig, add_mask_token, diffusion_decode, train_diffusion
from .drafter import DrafterConfig, Speculative, build_drafter, train_drafter

__all__ = ["DiffusionConfig", "DrafterConfig", "Speculative", "add_mask_token", "build_drafter", "diffusion_decode",
           "train_diffusion", "train_drafter"]
