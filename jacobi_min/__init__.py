"""jacobi-min: a minimal, tested reference implementation of Jacobi Forcing."""
from .batch import batch_jacobi_decode
from .generate import jacobi_generate
from .jacobi import BlockTrajectory, DecodeResult, greedy_decode, jacobi_decode
from .model import load
from .multiblock import MultiBlockResult, multiblock_decode
from .sampling import Pick, sampler

__all__ = ["BlockTrajectory", "DecodeResult", "MultiBlockResult", "Pick", "batch_jacobi_decode", "greedy_decode",
           "jacobi_decode", "jacobi_generate", "load", "multiblock_decode", "sampler"]
