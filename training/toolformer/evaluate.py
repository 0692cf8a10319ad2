"""Toolformer's evaluation: math word problems (first number of the answer) with and without calls, and
perplexity on held-out text with calls disabled (the paper's Table 8 check)."""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import torch

from visual_tools import Tool

from .corpus import SVAMP
from .decode import generate_with_calls
from .lm import start_ids
from .prompts import ANSWER_PROMPT, strip_calls

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def load_math(path: str | Path = SVAMP, limit: int = 0) -> list[dict]:
    """SVAMP-style problems ({Body, Question, Answer}) or JSONL {question | prompt, answer} -> problems."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    raw = json.loads(text) if path.suffix == ".json" else [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    problems = []
    for item in raw:
        if "Body" in item:
            body = item["Body"].strip()
            question = f"{body}{'' if body.endswith(('.', '?', '!')) else '.'} {item['Question'].strip()}"
            problems.append({"id": item.get("ID", str(len(problems))), "question": question,
                             "answer": float(item["Answer"])})
        else:  # {question, answer}, or {prompt, answer}: a raw prompt (a cloze of `toolformer corpus --cloze`)
            problems.append({"id": str(item.get("id", len(problems))), "question": item.get("question", ""),
                             "prompt": item.get("prompt"), "answer": float(item["answer"])})
    return problems[:limit] if limit else problems


def first_number(text: str) -> float | None:
    """The first number the model itself wrote (call spans left out), as the paper scores math answers."""
    match = NUMBER.search(strip_calls(text).replace(",", ""))
    return float(match.group()) if match else None


def correct(prediction: float | None, answer: float) -> bool:
    return prediction is not None and abs(prediction - answer) < 0.01 * max(1.0, abs(answer))


def math_eval(model, tokenizer, tools: Mapping[str, Tool], problems: list[dict], ks: Iterable[int] = (0, 1, 3, 10),
              max_new_tokens: int = 40, on_progress: Callable[[int, int], None] | None = None
              ) -> tuple[list[dict], list[dict]]:
    """(one row per k: accuracy and call rate, one row per problem and k)."""
    ks = list(ks)
    rows, details = [], []
    total, done = len(ks) * len(problems), 0
    for k in ks:
        right = calls = 0
        for problem in problems:
            prompt = problem.get("prompt") or ANSWER_PROMPT.format(question=problem["question"])
            out = generate_with_calls(model, tokenizer, prompt, tools, k=k, max_new_tokens=max_new_tokens)
            predicted = first_number(out.text)
            ok = correct(predicted, problem["answer"])
            right, calls = right + ok, calls + bool(out.calls)
            details.append({"k": k, "id": problem["id"], "output": out.text, "predicted": predicted,
                            "answer": problem["answer"], "correct": ok,
                            "calls": [vars(c) for c in out.calls], "notes": out.notes})
            done += 1
            if on_progress:
                on_progress(done, total)
        rows.append({"k": k, "problems": len(problems), "accuracy": round(100 * right / max(len(problems), 1), 1),
                     "inputs with a call (%)": round(100 * calls / max(len(problems), 1), 1)})
    return rows, details


@torch.inference_mode()
def perplexity(model, tokenizer, texts: Iterable[str], max_tokens: int = 512) -> float:
    """exp(mean token NLL) of `texts`, each conditioned on the start token only; calls play no part."""
    nll, count = 0.0, 0
    for text in texts:
        ids = start_ids(tokenizer) + tokenizer(text, add_special_tokens=False)["input_ids"][:max_tokens]
        if len(ids) < 2:
            continue
        tensor = torch.tensor([ids], device=model.device)
        logits = model(tensor).logits[0, :-1].float()
        nll += float(torch.nn.functional.cross_entropy(logits, tensor[0, 1:], reduction="sum"))
        count += len(ids) - 1
    if not count:
        raise ValueError("no text to measure perplexity on")
    return math.exp(nll / count)


def markdown(rows: list[dict]) -> str:
    keys = list(rows[0])
    return "\n".join(["| " + " | ".join(keys) + " |", "|---" * len(keys) + "|",
                      *("| " + " | ".join(str(r[key]) for key in keys) + " |" for r in rows)])
