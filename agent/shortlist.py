"""Tool retrieval: before a turn, rank the available tools for the user's words and offer the prompt the likeliest.

TinyAgent's ToolRAG and ToolLLM's API retriever: GPT4Tools itself never lists more than 5 tools in a prompt. One
`Shortlist` serves the chat, training-data rendering and evaluation, so the model meets at run time the lists it
was trained on. The list is ranked, most likely first (its order is part of the prompt), and sized by the
classifier's confidence: every tool whose probability reaches `threshold`, at least one and at most `k`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .embedded import ADAPTER_DIR, NO_ADAPTER
from .prompts import IMAGE_TURN, Turn

DEFAULT_K = 5  # the most tools a turn is offered
# a tool is offered when its probability (with the previous request's weighed in) reaches this; chosen on the
# hand-written cases (`python bench/shortlist.py`, docs/controller-prompting.md), never on the blind ones
DEFAULT_THRESHOLD = 0.05
RETRIEVER_DIR = "retriever"  # the classifier's folder inside an adapter's folder
SHIPPED_RETRIEVER = ADAPTER_DIR / RETRIEVER_DIR
RECENT_WEIGHT = 0.5  # how much the previous request counts beside the new one (follow-ups: "now as a sketch")
# a request needs a tool that is not here when the classifier gives that tool at least MISSING_MIN and MISSING_RATIO
# times the best available one's probability; chosen on assets/eval/missing-tools/dev.jsonl and the hand-written cases'
# false alarms (`python bench/missing.py`, docs/benchmarks.md)
MISSING_MIN, MISSING_RATIO = 0.05, 1.0
# a request needs no tool when no available tool reaches this probability: the turn is answered directly (its
# grammar allows no call); chosen on the hand-written cases (`python bench/missing.py`, docs/benchmarks.md)
NO_TOOL_BELOW = 0.02


class Named(Protocol):
    name: str


class Retriever(Protocol):
    name: str
    probabilities: bool  # whether `scores` are probabilities (a threshold applies) or only an order (BM25)

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """For each text, a score per tool name it knows (higher: more likely needed)."""


def _last_request(history: Sequence[Turn]) -> str:
    """The user's previous request, skipping GPT4Tools' image turns (they name a file, not a task)."""
    return next((turn.human for turn in reversed(history) if not turn.human.startswith(IMAGE_TURN)), "")


@dataclass
class Shortlist:
    """`k`: the most tools offered; `threshold`: the probability a tool needs to be offered (at least one always
    is). A retriever whose scores are not probabilities (BM25) has no threshold: it offers its top k."""

    retriever: Retriever
    k: int = DEFAULT_K
    threshold: float = DEFAULT_THRESHOLD
    tools: Sequence = ()  # every tool of the app, available or not: what `missing` matches a request against

    def scored(self, text: str, names: Sequence[str], history: Sequence[Turn] = ()) -> list[tuple[str, float]]:
        """(name, score) for `names`, most likely first: the score for `text` plus `RECENT_WEIGHT` times the one
        for the conversation's previous request. Ties keep `names`' order."""
        recent = _last_request(history)
        now, *before = self.retriever.scores([text, recent] if recent else [text])
        score = {n: now.get(n, float("-inf")) + RECENT_WEIGHT * (before[0].get(n, 0.0) if before else 0.0)
                 for n in names}
        return sorted(score.items(), key=lambda item: -item[1])

    def rank(self, text: str, names: Sequence[str], history: Sequence[Turn] = ()) -> list[str]:
        """`names` ordered by how likely `text` needs each, after the conversation's previous request."""
        return [name for name, _ in self.scored(text, names, history)]

    def offer(self, text: str, names: Sequence[str], history: Sequence[Turn] = (), must: Sequence[str] = (),
              k: int | None = None) -> list[str]:
        """The names offered for `text`, most likely first: each whose score reaches the threshold (the likeliest
        where none does), at most `self.k`; `must` (those among `names`) always, each placed by its own score,
        taking the place of the least likely others where the list would exceed k (training data: the list the
        chat would offer, its gold tools among it). An explicit `k` (training data drawing a list size) offers
        exactly the top k instead, `must` among them (more where `must` holds more; fewer where `names` are
        fewer). A retriever whose scores are not probabilities (BM25) has no threshold: its top `self.k`."""
        ranked = self.scored(text, names, history)
        keep = {n for n in must if n in names}
        if k is None and getattr(self.retriever, "probabilities", False):
            # none is likely: the likeliest still (the list the chat offers is never empty)
            candidates = [name for name, score in ranked if score >= self.threshold] or [n for n, _ in ranked[:1]]
        else:
            candidates = [name for name, _ in ranked]
        size = self.k if k is None else k
        for name in candidates:
            if len(keep) >= max(size, 1):
                break
            keep.add(name)
        return [name for name, _ in ranked if name in keep]

    def missing(self, text: str, available: Sequence[str]) -> str | None:
        """The tool `text` needs when it is one of `self.tools` that is not `available` and the classifier clearly
        prefers it to every available one, else None. Only a classifier decides: BM25's scores are no probabilities."""
        absent = [t.name for t in self.tools if t.name not in set(available)]
        if not absent or not getattr(self.retriever, "probabilities", False):
            return None
        probs = self.retriever.scores([text])[0]
        best = max(absent, key=lambda n: probs.get(n, 0.0))
        rival = max((probs.get(n, 0.0) for n in available), default=0.0)
        return best if probs.get(best, 0.0) >= max(MISSING_MIN, MISSING_RATIO * rival) else None

    def needs_none(self, text: str, available: Sequence[str]) -> bool:
        """True when the classifier finds no available tool likely for `text` (greetings, thanks, small talk). The
        request alone decides: weighing the previous one in (as `scored` does) also let goodbyes after a tool
        request call a tool again (measured on the multi-turn set: docs/benchmarks.md)."""
        if not available or not getattr(self.retriever, "probabilities", False):
            return False
        probs = self.retriever.scores([text])[0]
        return max(probs.get(n, 0.0) for n in available) < NO_TOOL_BELOW

    def pick(self, user_input: str, history: Sequence[Turn], tools: Sequence[Named]) -> list:
        """The tools one chat turn offers, most likely first (as `offer` ranks their names)."""
        by_name = {t.name: t for t in tools}
        return [by_name[name] for name in self.offer(user_input, list(by_name), history)]


def retriever_folder(adapter: str | None = None) -> Path:
    """The classifier beside `adapter` where it has one, else the shipped one (it ranks tools for any controller)."""
    own = Path(adapter) / RETRIEVER_DIR if adapter and adapter != NO_ADAPTER else None
    return own if own is not None and own.is_dir() else SHIPPED_RETRIEVER


def load_shortlist(k: int, folder: str | Path | None, tools: Sequence) -> tuple[Shortlist | None, str]:
    """A shortlist of at most `k` (None for k <= 0: every tool is offered) over `tools`, and a note for the user
    where its classifier was refused (it then ranks by BM25 and offers its top k)."""
    if k <= 0:
        return None, ""
    from .retriever import load_retriever
    retriever, note = load_retriever(folder or SHIPPED_RETRIEVER, tools)
    return Shortlist(retriever, k, tools=tuple(tools)), note
