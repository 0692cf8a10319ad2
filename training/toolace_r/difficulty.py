"""Model-aware difficulty: how far k of the model's own samples are from the gold call list.

S_ij = |a_i ∩ a'_j| / |a_i ∪ a'_j| over (argument, value) pairs when the names match, else 0 — a same-name
argument with another value is in the union and not in the intersection, never half right. The sequence score
O is the best one-to-one matching (Hungarian, `scipy.optimize.linear_sum_assignment`) summed and divided by
max(m, m'); D = 1 − mean O over the k samples.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from .calls import Call, CallParseError, Style, parse_reply


def call_score(gold: Call, pred: Call) -> float:
    if gold.name != pred.name:
        return 0.0
    a, b = gold.pairs(), pred.pairs()
    return len(a & b) / len(a | b) if a | b else 1.0  # both without arguments: the same call


def alignment(gold: Sequence[Call], pred: Sequence[Call]) -> float:
    """O(A, A') in [0, 1]; two empty lists (no call needed, none made) align fully."""
    if not gold and not pred:
        return 1.0
    if not gold or not pred:
        return 0.0
    scores = np.array([[call_score(g, p) for p in pred] for g in gold])
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return float(scores[rows, cols].sum()) / max(len(gold), len(pred))


def reply_alignment(gold: Sequence[Call], reply: str, style: Style, tools: Mapping[str, Any] | None = None) -> float:
    """The alignment of a raw model reply; one that does not parse scores 0 (never an exception)."""
    try:
        return alignment(gold, parse_reply(reply, style, tools))
    except CallParseError:
        return 0.0


def difficulty(gold: Sequence[Call], replies: Sequence[str], style: Style,
               tools: Mapping[str, Any] | None = None) -> float:
    if not replies:
        raise ValueError("difficulty needs at least one sample (k >= 1)")
    return 1.0 - sum(reply_alignment(gold, r, style, tools) for r in replies) / len(replies)


@dataclass
class Scored:
    difficulty: float
    replies: list[str]


def score_samples(generate: Callable[[str, int], list[str]], prompts: Sequence[str],
                  golds: Sequence[Sequence[Call]], style: Style, k: int, tools: Mapping[str, Any] | None = None,
                  on_progress: Callable[[int, int], None] | None = None) -> list[Scored]:
    """D for each sample from `generate(prompt, k)` -> k replies (one batched call per prompt)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    out = []
    for number, (prompt, gold) in enumerate(zip(prompts, golds), 1):
        replies = generate(prompt, k)
        out.append(Scored(difficulty(gold, replies, style, tools), replies))
        if on_progress:
            on_progress(number, len(prompts))
    return out
