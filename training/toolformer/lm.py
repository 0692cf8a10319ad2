"""The language model Toolformer annotates with, is tuned from and decodes with: the controller's own loader."""
from __future__ import annotations

from agent.hf_controller import TransformersController

from ..tuning.sft import base_checkpoint


def load_lm(base: str = "embedded", adapter: str | None = None) -> TransformersController:
    """`embedded`, a hub id or a folder, plus an optional LoRA adapter; prompts are sent raw (no chat template)."""
    source, name = base_checkpoint(base)
    return TransformersController.from_pretrained(source, adapter=adapter, chat_format="raw",
                                                  name=name + (f" + {adapter}" if adapter else ""),
                                                  prefix_cache=False)


def call_token_ids(tokenizer) -> list[int]:
    """The ids of the tokens that open a call: `[` and ` [` where the vocabulary has them as one token."""
    ids = {enc[0] for text in ("[", " [") if len(enc := tokenizer(text, add_special_tokens=False)["input_ids"]) == 1}
    if not ids:
        raise ValueError("the tokenizer has no single token for '[': Toolformer calls cannot be triggered")
    return sorted(ids)


def closing_token_ids(tokenizer) -> list[int]:
    """Every token whose text holds `]`: sampling a call stops at any of them (one `]` token may be `)]`)."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return [i for i, text in enumerate(texts) if "]" in text]


def start_ids(tokenizer) -> list[int]:
    """One token to condition the first word on (BOS, else EOS), so a text's first token can be scored too."""
    token = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    return [token] if token is not None else []
