"""Fine-tuning on C* with our LoRA trainer: the standard language-modelling loss over whole texts."""
from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from visual_tools.text_tools import read_rows

from ..tuning.sft import TrainConfig, TrainingError, fit, load_tokenizer
from .lm import start_ids


def build_lm_examples(texts: list[str], tokenizer, cutoff: int) -> list[dict]:
    """Each text -> start token + text + EOS; every token but the start is a label (nothing is masked)."""
    rows = []
    for text in texts:
        ids = start_ids(tokenizer) + tokenizer(text, add_special_tokens=False)["input_ids"][: cutoff - 2]
        if tokenizer.eos_token_id is not None:
            ids.append(tokenizer.eos_token_id)
        rows.append({"input_ids": ids, "labels": [-100] + ids[1:]})
    return rows


def model_card(meta: dict) -> str:
    c = meta["config"]
    return (f"---\nbase_model: {meta['base']}\nlibrary_name: peft\ntags: [lora, toolformer, toolsmith]\n---\n\n"
            f"# Toolsmith Toolformer LoRA\n\nA LoRA adapter for `{meta['base']}` tuned on an API-call-augmented "
            f"corpus C* (`python -m training toolformer train`): calls look like `[Calculator(400 / 1400) -> 0.29]`."
            f"\n\n- data: `{Path(meta['data']).name}` (sha256 `{meta['data_sha256'][:16]}…`), {meta['records']} texts, "
            f"{meta['texts_with_calls']} of them with calls\n- LoRA r {c['lora_r']}, alpha {c['lora_alpha']} on "
            f"{', '.join(c['target_modules'])}; lr {c['learning_rate']}, {c['epochs']} epochs, "
            f"{meta['global_step']} steps; final train loss {meta['train_loss']:.4f}\n")


def finetune(config: TrainConfig, calls_only: bool = False) -> Path:
    """Train on C* (`config.data`: JSONL rows with "text"); `calls_only` keeps only texts that got calls."""
    path = Path(config.data)
    if not path.is_file():
        raise TrainingError(f"no such data file: {config.data}")
    rows = read_rows(path)
    if calls_only:
        rows = [row for row in rows if row.get("calls")]
    if not rows:
        raise TrainingError(f"no texts to train on in {config.data}" + (" with calls" if calls_only else ""))
    tokenizer, _ = load_tokenizer(replace(config, chat_format="raw"))
    examples = build_lm_examples([row["text"] for row in rows], tokenizer, config.cutoff)
    meta = {"kind": "toolformer", "chat_format": "raw", "data_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "records": len(rows), "texts_with_calls": sum(bool(row.get("calls")) for row in rows)}
    return fit(replace(config, chat_format="raw"), tokenizer, examples, meta, model_card)
