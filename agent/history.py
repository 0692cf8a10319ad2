"""The "Previous conversation" a turn's prompt holds, built on purpose: one function for the chat, the training
data and the evaluation, so that what the model learns from is what it sees."""
from __future__ import annotations

from visual_tools.image_store import IMAGE_NAME

from .prompts import IMAGE_TURN, Turn

HISTORY_TURNS = 6  # turns kept (uploads included); chosen by bench/multiturn.py (docs/benchmarks.md)
ANSWER_WORDS = 24  # an earlier answer is cut to this many words: what it said, not a sentence to copy whole


def short_answer(answer: str, words: int = ANSWER_WORDS) -> str:
    """The answer's first `words` words, then the image names it made that were cut off (later turns refer
    to them: "now make that a sketch")."""
    parts = answer.split()
    if len(parts) <= words:
        return answer
    kept = " ".join(parts[:words])
    lost = [n for n in dict.fromkeys(IMAGE_NAME.findall(" ".join(parts[words:]))) if n not in kept]
    return kept + " ..." + "".join(f" {n}" for n in lost)


def recent(history: list[Turn], limit: int) -> list[Turn]:
    """At most `limit` recent turns, dropped half a window at a time: a window that slid by one
    turn every turn would change the prompt's start, and the controller's prefix cache with it."""
    if len(history) <= limit:
        return history
    step = max(1, limit // 2)
    start = ((len(history) - limit) // step + 1) * step
    return history[start:]


def prompt_history(history: list[Turn], limit: int = HISTORY_TURNS) -> list[Turn]:
    """The recent window, answers cut short; the newest upload stays in front when the window lost it
    (GPT4Tools' "Provide an image named ..." turn is how the model knows which image is meant)."""
    window = recent(history, limit)
    uploads = uploads_only(history)
    if uploads and uploads[-1] not in window:
        window = [uploads[-1], *window]
    return [Turn(t.human, short_answer(t.ai)) for t in window]


def plain(answer: str) -> str:
    """An answer as compared for copying: case, spacing and end punctuation aside."""
    return " ".join(answer.lower().split()).rstrip(".!")


def uploads_only(history: list[Turn]) -> list[Turn]:
    """The upload turns alone: the history of a retry whose first answer copied an earlier one."""
    return [t for t in history if t.human.startswith(IMAGE_TURN)]
