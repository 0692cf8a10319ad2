"""How a GPT4Tools prompt becomes the text and token ids a model reads: one format for every engine and for training."""
from __future__ import annotations

from typing import Literal

from .prompts import Prompt

ChatFormat = Literal["auto", "raw", "chat", "vicuna"]


def resolve_chat_format(tokenizer, chat_format: ChatFormat) -> ChatFormat:
    """"auto": "chat" when the tokenizer has a chat template, else "raw"."""
    return ("chat" if tokenizer.chat_template else "raw") if chat_format == "auto" else chat_format


def format_prompt(tokenizer, prompt: str, chat_format: ChatFormat) -> str:
    """The text the model reads for a prompt; training renders its examples with this too. A `Prompt`'s reply so far
    (the `compact` template's scratchpad) follows the assistant's tag, for the model to continue."""
    head, reply = (prompt.head, prompt.reply) if isinstance(prompt, Prompt) else (prompt, "")
    chat_format = resolve_chat_format(tokenizer, chat_format)
    if chat_format == "vicuna":
        return f"USER: \n{head}ASSISTANT:{reply}"
    if chat_format == "chat":
        return tokenizer.apply_chat_template([{"role": "user", "content": head}], tokenize=False,
                                             add_generation_prompt=True) + reply
    return head + reply


def encode_prompt(tokenizer, prompt: str, chat_format: ChatFormat) -> list[int]:
    """Token ids of the formatted prompt (a chat template brings its own special tokens)."""
    chat_format = resolve_chat_format(tokenizer, chat_format)
    return tokenizer(format_prompt(tokenizer, prompt, chat_format),
                     add_special_tokens=chat_format != "chat")["input_ids"]
