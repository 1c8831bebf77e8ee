"""The shipped checkpoints: they load, fail clearly when broken, and decode losslessly."""
import functools
import shutil

import pytest

import jacobi_min
from jacobi_min.model import CHECKPOINTS
from jacobi_min.tools import task
from tests.conftest import generate_greedy

BLOCK_SIZES = [1, 2, 3, 4, 8, 16, 32, 64]
MAX_NEW = task.MAX_ANSWER_TOKENS


@functools.cache
def shipped(name: str):
    return jacobi_min.load(name)


@functools.cache
def reference(name: str, prompt: tuple[int, ...]) -> list[int]:
    """generate's greedy output of the shipped model `name`, computed once per prompt and worker."""
    return generate_greedy(shipped(name)[0], list(prompt), MAX_NEW)


def held_out_prompts(tokenizer, per_bucket):
    """`per_bucket` held-out prompts of every length bucket."""
    return [tokenizer(p.prompt)["input_ids"] for length in task.BUCKETS
            for p in task.problems("test", per_bucket, seed=11, length=length)]


@pytest.mark.exactness
def test_base_model_matches_generate_on_held_out_prompts_of_every_length():
    model, tokenizer = shipped("base")
    for prompt in held_out_prompts(tokenizer, 1):
        expected = reference("base", tuple(prompt))
        assert expected[-1] == tokenizer.eos_token_id  # the model finishes its answers
        for n in BLOCK_SIZES:
            assert jacobi_min.jacobi_decode(model, prompt, n, MAX_NEW).tokens == expected


@pytest.mark.parametrize("name", ["jacobi-forcing", "cllm"])
@pytest.mark.exactness
def test_trained_checkpoints_decode_losslessly(name):
    model, tokenizer = shipped(name)
    for prompt in held_out_prompts(tokenizer, 3):
        for n in (4, 16, 32, 64):
            assert jacobi_min.jacobi_decode(model, prompt, n, MAX_NEW).tokens == reference(name, tuple(prompt))


def test_embedded_model_is_a_small_qwen2(base):
    model, tokenizer = base
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert sum(p.numel() for p in model.parameters()) < 10_000_000
    assert tokenizer.eos_token_id in jacobi_min.utils.eos_ids(model)
    assert tokenizer.pad_token_id != tokenizer.eos_token_id


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        jacobi_min.load(tmp_path / "nothing-here")


def test_corrupted_checkpoint_is_a_clear_error(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(CHECKPOINTS / "base", broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ValueError, match="could not load checkpoint"):
        jacobi_min.load(broken)


def test_checkpoint_without_tokenizer_is_a_clear_error(tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(CHECKPOINTS / "base", bare)
    (bare / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="has no tokenizer"):
        jacobi_min.load(bare)


@pytest.mark.parametrize("name, device, message", [
    ("jacobi_forcing", "cpu", "did you mean 'jacobi-forcing'"), ("bse", "cpu", "did you mean 'base'"),
    ("base", "gpu", "unknown device 'gpu'"), ("base", "cuda", "sees no CUDA GPU")])
def test_mistyped_names_and_devices_are_clear_errors(name, device, message):
    if device == "cuda" and __import__("torch").cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match=message):
        jacobi_min.load(name, device)


def test_shipped_tokenizer_is_the_training_tokenizer(base):
    """Rebuilding the tokenizer from the training split gives the shipped one, id for id."""
    from jacobi_min.tools import tiny
    _, tokenizer = base
    cfg = tiny.BaseConfig()
    train = task.problems("train", cfg.train_problems, seed=cfg.seed)
    rebuilt = tiny.build_tokenizer([p.prompt + p.completion for p in train], cfg.vocab_size)
    for p in task.problems("test", 100):
        ids = tiny.encode(tokenizer, p)
        assert ids == tiny.encode(rebuilt, p)
        assert tokenizer.decode(ids) == p.prompt + p.completion + tokenizer.eos_token


@pytest.mark.parametrize("name", ["base", "jacobi-forcing", "cllm"])
def test_auto_tokenizer_reads_the_tokenizer_file_exactly(name):
    """AutoTokenizer (a Qwen2Tokenizer for every qwen2 checkpoint) gives tokenizer.json's own ids."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer
    auto = AutoTokenizer.from_pretrained(CHECKPOINTS / name)
    raw = Tokenizer.from_file(str(CHECKPOINTS / name / "tokenizer.json"))
    assert type(auto).__name__ == "Qwen2Tokenizer"
    assert (auto.eos_token, auto.pad_token) == ("<|endoftext|>", "<|pad|>")
    for p in task.problems("test", 200):
        for text in (p.prompt, p.completion):
            assert auto(text)["input_ids"] == raw.encode(text).ids
    assert auto(" 45")["input_ids"] == raw.encode(" 45").ids and len(raw.encode(" 45").ids) == 3  # " ", "4", "5"


def test_auto_model_loads_the_embedded_checkpoint():
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(CHECKPOINTS / "base")
    assert model.config.model_type == "qwen2"


@pytest.mark.parametrize("name", ["base", "jacobi-forcing"])
@pytest.mark.exactness
def test_multiblock_on_shipped_models_matches_generate(name):
    from jacobi_min import multiblock_decode
    model, tokenizer = shipped(name)
    settings = [(4, 2, 0.5, 4), (8, 3, 0.85, 1), (16, 2, 0.85, 4), (16, 2, 0.5, 8), (32, 3, 1.0, 4), (64, 2, 0.85, 0)]
    for prompt in held_out_prompts(tokenizer, 1 if name == "base" else 2):  # the base: slow, it accepts ~1 a forward
        for n, k, r, pool in settings:
            result = multiblock_decode(model, prompt, n, MAX_NEW, blocks=k, spawn_ratio=r, pool_size=pool)
            assert result.tokens == reference(name, tuple(prompt))
            assert all(a >= 1 for a in result.accepted)


def test_demo_prints_identical_outputs_for_every_bucket(capsys):
    from jacobi_min.tools.commands import main
    main(["demo", "--models", "jacobi-forcing", "--problems", "1"])
    out = capsys.readouterr().out
    assert "identical outputs: 3/3" in out and all(f"  {length:6s}  identical=True" in out for length in task.BUCKETS)
