"""Noise filters for generated records, each counting what it drops (GPT4Tools' cleaning + self-instruct's ROUGE-L)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path


from visual_tools import ToolRegistry

from .records import Record

ROUGE_THRESHOLD = 0.7  # self-instruct drops an instruction this similar to one already kept


def check(record: Record, registry: ToolRegistry) -> str | None:
    """Why the record is unusable ("unknown tool", "arguments", ..., "missing image" last), or None."""
    images = {record.image_name} if record.image_name else set()
    for step in record.steps:
        tool = registry.tools.get(step.tool)
        if tool is None:
            return "unknown tool"
        if step.tool not in record.tools:
            return "tool not offered"
        if not len(tool.required()) <= len(step.args) <= len(tool.inputs) or not all(a.strip() for a in step.args):
            return "arguments"
        for spec, arg in zip(tool.inputs, step.args):
            if spec.type == "image_path" and arg not in images:
                return "arguments"  # an image the conversation never had
            if spec.type == "number":
                try:
                    float(arg)
                except ValueError:
                    return "arguments"
        if tool.output == "image_path":
            images.add(step.observation)
    if record.answer is None and not record.steps:
        return "empty"
    if record.image_name and (not record.image or not Path(record.image).is_file()):
        return "missing image"
    return None


def filter_records(records: Iterable[Record], registry: ToolRegistry,
                   threshold: float = ROUGE_THRESHOLD) -> tuple[list[Record], Counter]:
    """Kept records and a count of drops per reason.

    Near duplicates are judged per image: the same words asked of another photo are another sample.
    """
    from rouge_score import rouge_scorer  # here: it imports nltk (~1 s), which the app needs only when it filters
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    kept: list[Record] = []
    dropped: Counter = Counter()
    seen: dict[str | None, list[str]] = {}
    for record in records:
        reason = check(record, registry)
        earlier = seen.setdefault(record.image, [])
        if reason is None and any(scorer.score(old, record.instruction)["rougeL"].fmeasure >= threshold
                                  for old in earlier):
            reason = "near duplicate"
        if reason:
            dropped[reason] += 1
            continue
        kept.append(record)
        earlier.append(record.instruction)
    return kept, dropped
