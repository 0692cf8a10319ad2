"""Tool retrieval: before a turn, rank the available tools for the user's words and offer the prompt the top k.

TinyAgent's ToolRAG and ToolLLM's API retriever: GPT4Tools itself never lists more than 5 tools in a prompt. One
`Shortlist` serves the chat, training-data rendering and evaluation, so the model meets at run time the lists it
was trained on.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .embedded import ADAPTER_DIR, NO_ADAPTER
from .prompts import IMAGE_TURN, Turn

DEFAULT_K = 5
RETRIEVER_DIR = "retriever"  # the classifier's folder inside an adapter's folder
SHIPPED_RETRIEVER = ADAPTER_DIR / RETRIEVER_DIR
RECENT_WEIGHT = 0.5  # how much the previous request counts beside the new one (follow-ups: "now as a sketch")


class Named(Protocol):
    name: str


class Retriever(Protocol):
    name: str

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """For each text, a score per tool name it knows (higher: more likely needed)."""


def _last_request(history: Sequence[Turn]) -> str:
    """The user's previous request, skipping GPT4Tools' image turns (they name a file, not a task)."""
    return next((turn.human for turn in reversed(history) if not turn.human.startswith(IMAGE_TURN)), "")


@dataclass
class Shortlist:
    retriever: Retriever
    k: int = DEFAULT_K

    def rank(self, text: str, names: Sequence[str], history: Sequence[Turn] = ()) -> list[str]:
        """`names` ordered by how likely `text` needs each, after the conversation's previous request."""
        recent = _last_request(history)
        now, *before = self.retriever.scores([text, recent] if recent else [text])
        score = {n: now.get(n, float("-inf")) + RECENT_WEIGHT * (before[0].get(n, 0.0) if before else 0.0)
                 for n in names}
        return sorted(names, key=lambda n: -score[n])

    def names(self, text: str, names: Sequence[str], history: Sequence[Turn] = (), must: Sequence[str] = (),
              k: int | None = None) -> list[str]:
        """The k names offered for `text`, `must` among them, in `names`' own order."""
        k = self.k if k is None else k
        keep = list(dict.fromkeys(n for n in must if n in names))
        for name in self.rank(text, names, history):
            if len(keep) >= k:
                break
            if name not in keep:
                keep.append(name)
        chosen = set(keep)
        return [n for n in names if n in chosen]

    def pick(self, user_input: str, history: Sequence[Turn], tools: Sequence[Named]) -> list:
        """The tools one chat turn offers."""
        chosen = set(self.names(user_input, [t.name for t in tools], history))
        return [t for t in tools if t.name in chosen]


def retriever_folder(adapter: str | None = None) -> Path:
    """The classifier beside `adapter` where it has one, else the shipped one (it ranks tools for any controller)."""
    own = Path(adapter) / RETRIEVER_DIR if adapter and adapter != NO_ADAPTER else None
    return own if own is not None and own.is_dir() else SHIPPED_RETRIEVER


def load_shortlist(k: int, folder: str | Path | None, tools: Sequence) -> tuple[Shortlist | None, str]:
    """A shortlist of `k` (None for k <= 0: every tool is offered) over `tools`, and a note for the user where its
    classifier was refused (it then ranks by BM25)."""
    if k <= 0:
        return None, ""
    from .retriever import load_retriever
    retriever, note = load_retriever(folder or SHIPPED_RETRIEVER, tools)
    return Shortlist(retriever, k), note
