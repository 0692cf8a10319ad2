"""The embedded GGUF for llama.cpp: its weights in float16 with a peft LoRA adapter merged in, cached by content.

Why a new file rather than the GGUF as shipped with a runtime LoRA: llama.cpp's CPU kernels evaluate a prompt
about twice as fast in float16 as in the shipped Q4_1 (`bench/agent_step.py`), and a merged adapter costs
nothing per token, where a runtime one slowed decoding by ~20 % here. float16 also holds the dequantised
Q4_1 values the adapter was trained on (the transformers path's fp32) almost exactly.
llama.cpp's own converters live in its source tree, which llama-cpp-python does not install; this uses
the `gguf` library they use, and their conventions (tensor names, q/k rows permuted for llama.cpp's rotary).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from .controller import ControllerError

FORMAT_VERSION = "1"  # bump when the written file changes: cached files of another version are not used
_PEFT_PREFIX = "base_model.model."


class AdapterConversionError(ControllerError):
    """The adapter cannot be merged for llama.cpp (what it targets or how); the transformers path can take it."""


def cache_key(base: Path, adapter: Path | None) -> str:
    """What the merged file depends on: the base file, the adapter's files, and this converter's version."""
    digest = hashlib.sha256(f"{FORMAT_VERSION}:{base.name}:{base.stat().st_size}".encode())
    for name in ("adapter_config.json", "adapter_model.safetensors") if adapter else ():
        with open(adapter / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def _permute(rows: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's rotary layout for q/k rows (convert_hf_to_gguf.py's LlamaModel.permute)."""
    return rows.reshape(n_head, 2, rows.shape[0] // n_head // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def lora_deltas(adapter: Path, n_blocks: int, n_head: int, n_kv: int) -> dict[str, np.ndarray]:
    """scale · B @ A per GGUF tensor name, in the GGUF's row order; refuses what llama.cpp cannot hold."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((adapter / "adapter_config.json").read_text())
    refused = [what for what, key in (("DoRA", "use_dora"), ("modules_to_save", "modules_to_save"),
                                      ("per-module ranks", "rank_pattern"), ("per-module alphas", "alpha_pattern"))
               if config.get(key)]
    if config.get("peft_type", "LORA") != "LORA" or refused:
        raise AdapterConversionError(f"{adapter}: a {config.get('peft_type')} adapter"
                                     + (f" with {', '.join(refused)}" if refused else "") + " is not merged here")
    if not (adapter / "adapter_model.safetensors").is_file():
        raise AdapterConversionError(f"{adapter}: no adapter_model.safetensors (only safetensors adapters merge)")
    r = config["r"]
    scale = config["lora_alpha"] / (math.sqrt(r) if config.get("use_rslora") else r)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_blocks)
    tensors = load_file(adapter / "adapter_model.safetensors")
    deltas = {}
    for key in sorted(k for k in tensors if ".lora_A." in k):
        module = key.removeprefix(_PEFT_PREFIX).split(".lora_A.")[0]
        name = names.get_name(module + ".weight", try_suffixes=(".weight",))
        if name is None or not name.startswith("blk."):
            raise AdapterConversionError(f"{adapter}: LoRA on '{module}' is not merged here (only layer weights)")
        b = tensors[key.replace(".lora_A.", ".lora_B.")].astype(np.float32)
        delta = scale * (b @ tensors[key].astype(np.float32))
        if module.endswith("q_proj"):
            delta = _permute(delta, n_head)
        elif module.endswith("k_proj"):
            delta = _permute(delta, n_kv)
        deltas[name] = delta
    return deltas


def write_merged(base: Path, adapter: Path | None, target: Path) -> Path:
    """`base` with `adapter` merged, its quantized weights as float16; written beside `target`, renamed onto it."""
    import gguf
    from gguf import GGMLQuantizationType as Q

    reader = gguf.GGUFReader(base)
    fields = {name: field.contents() for name, field in reader.fields.items()}
    if fields.get("general.architecture") != "llama":
        raise AdapterConversionError(f"{base} is a {fields.get('general.architecture')} model; only llama merges here")
    deltas = lora_deltas(adapter, fields["llama.block_count"], fields["llama.attention.head_count"],
                         fields["llama.attention.head_count_kv"]) if adapter else {}
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    writer = gguf.GGUFWriter(partial, "llama")
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
            continue  # the writer writes these itself
        kind = field.types[0]
        writer.add_key_value(name, fields[name], kind, field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    unused = set(deltas)
    for tensor in reader.tensors:
        if tensor.tensor_type in (Q.F32, Q.F16) and tensor.name not in deltas:
            writer.add_tensor(tensor.name, np.array(tensor.data))  # norms: as they are
            continue
        weight = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        if tensor.name in deltas:
            weight += deltas[tensor.name]
            unused.discard(tensor.name)
        writer.add_tensor(tensor.name, weight.astype(np.float16))
    if unused:
        raise AdapterConversionError(f"{adapter}: its LoRA targets {sorted(unused)[:3]}, which {base.name} lacks")
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    partial.replace(target)  # atomic: a file cut short by a kill is never found under the final name
    return target


def merged_gguf(base: Path, adapter: str | Path | None, cache: Path) -> Path:
    """The cached float16 GGUF of `base` + `adapter`, converted on first use (llama.cpp checks it when it loads)."""
    adapter = Path(adapter) if adapter else None
    if adapter and not (adapter / "adapter_config.json").is_file():
        raise AdapterConversionError(f"{adapter}: no adapter_config.json (not a peft adapter folder)")
    target = cache / f"{base.stem}-{adapter.name if adapter else 'untuned'}-{cache_key(base, adapter)}.f16.gguf"
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    for stale in cache.glob(f"{target.name}.partial-*"):  # left by a killed conversion
        pid = stale.name.rsplit("-", 1)[1]
        if not pid.isdigit() or not Path(f"/proc/{pid}").exists():
            stale.unlink(missing_ok=True)
    print(f"Converting {base.name}" + (f" + {adapter}" if adapter else "") + f" for llama.cpp -> {target} (once)...",
          file=sys.stderr, flush=True)
    return write_merged(base, adapter, target)
