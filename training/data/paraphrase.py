"""Paraphrases of generated instructions by an LLM teacher, kept only where they still ask for the same call.

Each kept paraphrase is a new pending record (source `<teacher>+paraphrase`) with the original's gold steps: it
goes through the same filters and the Review tab as any generated record.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from rouge_score import rouge_scorer
from tqdm.auto import tqdm

from agent.controller import Controller, ControllerError

from .records import Record, Source, record_id

PROMPT = ("Rewrite the request below in different words, the way another person might type it. Keep every number "
          "and name. Reply with the rewritten request only.\n\nRequest: {instruction}")
NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass
class ParaphraseReport:
    asked: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)


def why_not(original: str, candidate: str, scorer) -> str | None:
    """Why `candidate` cannot stand for `original` (same call, other words), or None."""
    if not candidate or "\n" in candidate or len(candidate) > 2 * len(original) + 40:
        return "empty or rambling"
    if sorted(NUMBER.findall(candidate)) != sorted(NUMBER.findall(original)):
        return "numbers changed"  # a box or an expression would no longer match the gold call
    overlap = scorer.score(original, candidate)["rougeL"].fmeasure
    if overlap >= 0.7:
        return "too close to the original"
    if overlap < 0.2:
        return "off topic"
    return None


def paraphrase(records: Iterable[Record], teacher: Controller, *, n: int = 2,
               temperature: float = 0.8) -> tuple[list[Record], ParaphraseReport]:
    """Up to `n` paraphrases of each record's instruction, as new records; and what was dropped, and why."""
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    report, out = ParaphraseReport(), []
    for record in tqdm(list(records), desc="paraphrasing", unit="record"):
        try:
            replies = teacher.generate(PROMPT.format(instruction=record.instruction), max_new_tokens=48,
                                       temperature=temperature, n=n)
        except ControllerError as exc:
            report.dropped[f"teacher failed: {exc}"[:80]] += n
            continue
        report.asked += n
        seen = {record.instruction.lower()}
        for reply in replies:
            candidate = reply.strip().strip('"').strip()
            reason = why_not(record.instruction, candidate, scorer) or ("repeated" if candidate.lower() in seen
                                                                         else None)
            if reason:
                report.dropped[reason] += 1
                continue
            seen.add(candidate.lower())
            out.append(record.model_copy(update={
                "id": record_id(record.id, "paraphrase", candidate), "instruction": candidate, "status": "pending",
                "original": None, "source": Source(teacher=f"{teacher.name}+paraphrase",
                                                   prompt_version=record.source.prompt_version,
                                                   job=record.source.job)}))
            report.kept += 1
    return out, report
