"""Decoding with calls: greedy, except that a call starts when `[` is among the k most likely tokens.

The call is generated greedily up to `->`, executed, and its result and `]` are inserted; then decoding goes
on. At most `max_calls` calls per input (the paper: one). k = 0 disables calls: `[` gets probability 0.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from agent.controller import Capability
from visual_tools import Tool

from .lm import call_token_ids, start_ids
from .prompts import ANSWER_PROMPT, CALL_END, CALL_START, RESULT_SEP, parse_call


@dataclass
class Call:
    tool: str
    args: str
    result: str
    failed: bool = False


@dataclass
class Generation:
    text: str
    calls: list[Call] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a call the model never closed


def run_call(text: str, tools: Mapping[str, Tool]) -> Call:
    """Execute `Tool(args)`; any failure becomes an error string in the result, never an exception."""
    parsed = parse_call(text)
    if parsed is None:
        return Call(text.strip(), "", f"error: '{text.strip()}' is not a call like Calculator(2 + 3)", True)
    name, args = parsed
    tool = tools.get(name)
    if tool is None:
        return Call(name, args, f"error: unknown tool '{name}' (tools: {', '.join(tools)})", True)
    try:
        return Call(name, args, str(tool(**tool.parse_input(args))))
    except Exception as exc:  # a refused input or a failing tool: the model reads the error and goes on
        return Call(name, args, f"error: {exc}", True)


@torch.inference_mode()
def generate_with_calls(model, tokenizer, prompt: str, tools: Mapping[str, Tool], *, k: int = 10,
                        max_new_tokens: int = 64, max_calls: int = 1, max_call_tokens: int = 32,
                        stop: Sequence[str] = ("\n",)) -> Generation:
    """Greedy decoding of `prompt` with Toolformer's top-k call trigger (our loop: `generate` cannot pause for a
    tool and insert its result mid-sequence)."""
    bracket = call_token_ids(tokenizer)
    cache = DynamicCache(config=model.config)

    def feed(ids: list[int]) -> torch.Tensor:
        out = model(input_ids=torch.tensor([ids], device=model.device), cache=cache, use_cache=True)
        return out.logits[0, -1].float()

    logits = feed(start_ids(tokenizer) + tokenizer(prompt, add_special_tokens=False)["input_ids"])  # as tuned
    generated: list[int] = []
    inserted = 0  # tool results: not the model's tokens, so not counted in max_new_tokens
    result = Generation("")
    calls_left = max_calls if k > 0 else 0
    while len(generated) - inserted < max_new_tokens:
        if calls_left and set(logits.topk(k).indices.tolist()) & set(bracket):
            calls_left -= 1
            mark, before = cache.get_seq_length(), logits
            call_ids = [max(bracket, key=lambda b: logits[b])]
            logits = feed(call_ids)
            for _ in range(max_call_tokens):
                call_ids.append(int(logits.argmax()))
                logits = feed(call_ids[-1:])
                text = tokenizer.decode(call_ids)
                if RESULT_SEP in text or CALL_END in text or "\n" in text:
                    break
            if RESULT_SEP in text:
                call = run_call(text.split(CALL_START, 1)[1].split(RESULT_SEP, 1)[0], tools)
                result.calls.append(call)
                tail = tokenizer(f" {call.result}{CALL_END}", add_special_tokens=False)["input_ids"]
                generated += call_ids + tail
                inserted += len(tail)
                logits = feed(tail)
                continue
            # never closed with `->`: forget the call, decode on from before it with calls disabled
            result.notes.append(f"a call was started but not closed: '{text.strip()}' (dropped)")
            cache.crop(mark - cache.get_seq_length())
            logits, calls_left = before, 0
        if not calls_left:
            logits[bracket] = -torch.inf  # calls disabled (k = 0) or used up
        token = int(logits.argmax())
        if token == tokenizer.eos_token_id:
            break
        generated.append(token)
        result.text = tokenizer.decode(generated, skip_special_tokens=True)
        if any(s in result.text for s in stop):
            break
        logits = feed([token])
    result.text = tokenizer.decode(generated, skip_special_tokens=True)
    for s in stop:
        result.text = result.text.split(s, 1)[0]
    return result


def answer(controller, question: str, tools: Mapping[str, Tool], k: int = 10) -> Generation:
    """The Chat tab's Toolformer mode: a question answered with calls by a controller with `Capability.WEIGHTS`."""
    if Capability.WEIGHTS not in controller.capabilities:
        raise ValueError(f"Toolformer mode needs a local transformers controller (embedded, a hub id or a folder); "
                         f"{controller.name} keeps no transformers model in this process")
    return generate_with_calls(controller.model, controller.tokenizer, ANSWER_PROMPT.format(question=question),
                               tools, k=k, max_new_tokens=96, stop=("\nQuestion:",))
