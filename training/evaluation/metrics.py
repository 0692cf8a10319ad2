"""GPT4Tools' success rates, computed as its `eval/evaluate_result.py` computes them.

Steps are compared position by position and divided by the longer list; a tool case is a success
when every thought and action matches and the arguments score >= 0.5; text arguments are scored with
BLEU-1, and an image argument only needs the prediction to name a `.png` (the script's rule; with
`strict_images` the prediction must also end with the gold image's root id, i.e. come from that image).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sacrebleu.metrics import BLEU

_THOUGHT = re.compile(r"Thought: Do I need to use a tool\? (.*)")
_ACTION = re.compile(r"Action: (.*)")
_INPUT = re.compile(r"Action Input: (.*)")
_ANSWER = re.compile(r"AI: (.*)")
_BLEU1 = BLEU(max_ngram_order=1, tokenize="none", effective_order=True)


@dataclass
class Score:
    thought: float
    action: float
    args: float
    success: float


def _found(pattern: re.Pattern, text: str) -> list[str]:
    return [item.strip() for item in pattern.findall(text)]


def _positional(gold: list, pred: list) -> list[float]:
    """1.0 where the two lists agree position by position, padded with 0 to the longer one."""
    flags = [float(g == p) for g, p in zip(gold, pred)]
    return flags + [0.0] * (max(len(gold), len(pred)) - len(flags))


def _root(name: str) -> str:
    return Path(name.strip()).stem.split("_")[-1]


def _args(gold: list[str], pred: list[str], strict_images: bool) -> list[float]:
    flags = []
    for g, p in zip(gold, pred):
        g_items, p_items = g.split(","), p.split(",")  # the script splits on every comma
        if len(g_items) != len(p_items):
            flags.append(0.0)
            continue
        scores = []
        for gi, pi in zip(g_items, p_items):
            if ".png" in gi:
                ok = ".png" in pi and (not strict_images or _root(gi) == _root(pi))
                scores.append(1.0 if ok else -1.0)
            elif not gi.strip():  # a tool without inputs (Calendar): nothing, or anything, is right
                scores.append(1.0)
            else:
                scores.append(_BLEU1.sentence_score(pi.strip(), [gi.strip()]).score / 100 if pi.strip() else 0.0)
        flags.append(0.0 if -1.0 in scores else sum(scores) / len(scores))
    return flags + [0.0] * (max(len(gold), len(pred)) - len(flags))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def score(gold: str, pred: str, strict_images: bool = False) -> Score:
    """Score one predicted trace against the gold trace (both in Thought/Action/Action Input/AI text)."""
    if "Action:" in gold and "Action Input:" in gold:
        gold_tools, gold_args = _found(_ACTION, gold), _found(_INPUT, gold)
        gold_thoughts = _found(_THOUGHT, gold)[:len(gold_tools)]
        pred_thoughts, pred_tools = _found(_THOUGHT, pred), _found(_ACTION, pred)
        action = _mean(_positional(gold_tools, pred_tools))
        args = _mean(_args(gold_args, _found(_INPUT, pred), strict_images))
        if len(pred_thoughts) == len(pred_tools) + 1 and pred_thoughts[-1] == "No":
            pred_thoughts.pop()  # the closing "No" after the last action is not a mistake
        thought = _mean(_positional(gold_thoughts, pred_thoughts))
        success = float(thought == 1.0 and action == 1.0 and args >= 0.5)
        return Score(thought, action, args, success)
    pred_thoughts = _found(_THOUGHT, pred)
    thought = _mean(_positional(_found(_THOUGHT, gold), pred_thoughts))
    if not pred_thoughts or pred_thoughts[0] != "No" or not _ANSWER.search(pred):
        thought = 0.0
    ok = float(thought == 1.0)
    return Score(thought, ok, ok, ok)
