"""jacobi-min: a minimal, tested reference implementation of Jacobi Forcing."""
from .jacobi import BlockTrajectory, DecodeResult, greedy_decode, jacobi_decode
from .multiblock import MultiBlockResult, multiblock_decode
from .model import load

__all__ = ["BlockTrajectory", "DecodeResult", "MultiBlockResult", "greedy_decode", "jacobi_decode", "load",
           "multiblock_decode"]
