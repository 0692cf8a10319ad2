"""The controller protocol every engine implements, and what an engine declares it can do (`Capability`).

Nothing here imports an engine: `agent.factory` turns a `ControllerSpec` into a controller."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from enum import Flag, auto
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .grammar import Grammar


class ControllerError(RuntimeError):
    """The controller could not answer (unreachable server, missing weights); shown to the user."""


class PromptTooLong(ControllerError):
    """The prompt and the reply do not fit the model's context: the agent drops the oldest history and retries."""


class Capability(Flag):
    """What a controller can serve beyond `generate`/`stream`; each class declares its own in `capabilities`, and a
    feature that needs one reads it there (never by probing attributes)."""
    GRAMMAR = auto()  # decodes under a step grammar (`generate(grammar=...)`); without it the grammar is ignored
    SCORES = auto()  # `token_logprobs(text)`: every token's log-probability (what `python -m agent serve` scores with)
    WEIGHTS = auto()  # `model` and `tokenizer`: a transformers model in this process (Toolformer's call decoding)


@runtime_checkable
class Controller(Protocol):
    name: str
    capabilities: Capability

    def generate(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
                 temperature: float = 0.0, n: int = 1, grammar: Grammar | None = None) -> list[str]:
        """`n` continuations of `prompt`, each cut before the first stop string; decoded under `grammar` where the
        engine can constrain (one without `Capability.GRAMMAR` ignores it)."""

    def stream(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
               temperature: float = 0.0, grammar: Grammar | None = None) -> Iterator[str]:
        """One continuation, yielded as text chunks as it is generated."""

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        """Log-probability of each token of `continuation` given `prompt` (raw text, no chat format)."""


def truncate_at(text: str, stop: Sequence[str]) -> str:
    """`text` up to the first occurrence of any stop string."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[: min(cuts)] if cuts else text


def stream_until_stop(chunks: Iterable[str], stop: Sequence[str]) -> Iterator[str]:
    """Re-chunk a text stream so that nothing from the first stop string on is ever yielded."""
    hold = max((len(s) for s in stop), default=1) - 1  # a stop string may straddle two chunks
    full, emitted = "", 0
    for chunk in chunks:
        full += chunk
        if truncate_at(full, stop) != full:
            break
        if len(full) - hold > emitted:
            yield full[emitted: len(full) - hold]
            emitted = len(full) - hold
    final = truncate_at(full, stop)
    if len(final) > emitted:
        yield final[emitted:]
