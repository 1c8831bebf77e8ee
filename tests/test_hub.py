"""The `custom_generate` folder (hub/jacobi-decoding) and the installable package.

Through the folder, `generate` hands Jacobi decoding every argument: the output
equals `model.generate(do_sample=False)` with stop strings, max_length and each
EOS form; a streamer receives the decoded text; sampling equals the
position-keyed AR sampler; what Jacobi decoding cannot do is refused.
"""
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from transformers import TextIteratorStreamer

from jacobi_min import greedy_decode, sampler
from jacobi_min.generate import JacobiGenerateOutput
from tests.test_generate import PROMPTS, embedded, generate, problem_ids, random_model

REPO = Path(__file__).resolve().parents[1]
FOLDER = str(REPO / "hub" / "jacobi-decoding")


def folder_generate(model, prompt: list[int], **kwargs):
    """model.generate through the custom_generate folder; kwargs go to generate."""
    return generate(model, prompt, custom_generate=FOLDER, trust_remote_code=True, **kwargs)


@pytest.mark.parametrize("block_size, blocks, pool_size", [(1, 1, 0), (5, 1, 0), (16, 1, 0), (8, 2, 0), (8, 2, 4)])
def test_folder_equals_generate(block_size, blocks, pool_size):
    model, options = random_model(), dict(block_size=block_size, blocks=blocks, pool_size=pool_size)
    for prompt in PROMPTS:
        assert folder_generate(model, prompt, max_new_tokens=40, **options) == generate(model, prompt, max_new_tokens=40)
        assert (folder_generate(model, prompt, max_length=len(prompt) + 25, **options)
                == generate(model, prompt, max_length=len(prompt) + 25))


@pytest.mark.parametrize("eos", [7, [7, 12], torch.tensor([7, 12])], ids=["int", "list", "tensor"])
def test_folder_honours_every_eos_form(eos):
    model = random_model(eos=())
    for prompt in PROMPTS:
        reference = generate(model, prompt, max_new_tokens=60, eos_token_id=eos)
        assert folder_generate(model, prompt, max_new_tokens=60, eos_token_id=eos, block_size=8) == reference


def test_folder_honours_stop_strings():
    model, tokenizer = embedded("jacobi-forcing")
    for prompt in problem_ids(tokenizer, 3):
        for stops in (["="], ["####", "Day 2"]):
            reference = generate(model, prompt, max_new_tokens=200, stop_strings=stops, tokenizer=tokenizer)
            out = folder_generate(model, prompt, max_new_tokens=200, stop_strings=stops, tokenizer=tokenizer)
            assert out == reference
            assert any(s in tokenizer.decode(out) for s in stops)  # it stopped at a stop string, not at EOS


def test_folder_streams_the_decoded_text():
    model, tokenizer = embedded("jacobi-forcing")
    prompt = problem_ids(tokenizer, 1)[0]
    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    job = threading.Thread(target=folder_generate, args=(model, prompt), kwargs=dict(max_new_tokens=120, streamer=streamer))
    job.start()
    text = "".join(streamer)
    job.join()
    expected = tokenizer.decode(generate(model, prompt, max_new_tokens=120), skip_special_tokens=True)
    assert text == expected and "####" in text


def test_folder_sampling_equals_the_ar_sampler():
    model = random_model()
    for prompt in PROMPTS:
        for seed in (0, 5):
            reference = greedy_decode(model, prompt, 40, pick=sampler(0.8, 10, 0.9, seed)).tokens
            assert folder_generate(model, prompt, do_sample=True, temperature=0.8, top_k=10, top_p=0.9, seed=seed,
                                   max_new_tokens=40, block_size=6, blocks=2) == reference


def test_folder_returns_the_decoding_statistics():
    model, prompt = random_model(eos=()), PROMPTS[0]
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=30, return_dict_in_generate=True,
                         custom_generate=FOLDER, trust_remote_code=True, block_size=8)
    assert isinstance(out, JacobiGenerateOutput)
    assert out.sequences[0, len(prompt):].tolist() == generate(model, prompt, max_new_tokens=30)
    assert sum(out.accepted) == 29 and out.tpf == 29 / out.forwards  # the prefill's token is not a forward's


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_beams=2), "beam search"),
    (dict(num_return_sequences=2), "one sequence per prompt"),
    (dict(prompt_lookup_num_tokens=3), "assisted decoding"),
    (dict(stop_strings=["="]), "needs the model's tokenizer"),
])
def test_folder_refuses_what_it_cannot_do(kwargs, message):
    with pytest.raises(ValueError, match=message):
        folder_generate(random_model(), PROMPTS[0], max_new_tokens=10, **kwargs)


def test_folder_refuses_a_batch_and_an_assistant():
    model, ids = random_model(), torch.tensor([PROMPTS[0], PROMPTS[0]])
    with pytest.raises(ValueError, match="batch size 1"):
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5, custom_generate=FOLDER,
                       trust_remote_code=True)
    with pytest.raises(ValueError, match="assisted decoding"):
        folder_generate(model, PROMPTS[0], max_new_tokens=5, assistant_model=model)


def test_folder_needs_trust_remote_code():
    with pytest.raises(ValueError, match="trust_remote_code"):
        generate(random_model(), PROMPTS[0], max_new_tokens=5, custom_generate=FOLDER)


def python_in(folder: Path, code: str, path: Path | None = None) -> str:
    """stdout of `python -c code` run in `folder`, with PYTHONPATH `path` (or none)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_package_imports_from_another_folder(tmp_path):
    """The README's install puts the package on the path (requirements.txt installs it, editable): the import
    and the commands work from any folder."""
    assert "jacobi_generate" in python_in(tmp_path, "import jacobi_min; print(jacobi_min.__all__)")
    commands = subprocess.run([sys.executable, "-m", "jacobi_min", "--help"], cwd=tmp_path, capture_output=True,
                              text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert commands.returncode == 0 and "generate" in commands.stdout


def test_wheel_carries_the_embedded_checkpoints(tmp_path):
    """A non-editable install loads every embedded model from the installed package."""
    source = tmp_path / "source"
    shutil.copytree(REPO / "jacobi_min", source / "jacobi_min", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "wheel"), str(source)],
                   check=True, capture_output=True)
    wheel = next((tmp_path / "wheel").glob("jacobi_min-*.whl"))
    subprocess.run(pip + ["install", "--no-deps", "--target", str(tmp_path / "site"), str(wheel)],
                   check=True, capture_output=True)
    code = ("import jacobi_min; from jacobi_min import load; from jacobi_min.model import embedded_names\n"
            "names = embedded_names(); [load(n) for n in names]; print(jacobi_min.__file__, *names)")
    where, *names = python_in(tmp_path, code, path=tmp_path / "site").split()
    assert Path(where).is_relative_to(tmp_path / "site")
    assert names == ["base", "block-diffusion", "cllm", "drafter", "jacobi-forcing"]
