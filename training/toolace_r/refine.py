"""Self-refinement: the fixed refine prompt (shared by training and inference) and adaptive refinement.

Adaptive: answer A', ask the model to refine it, stop when the refined answer's parsed calls equal the previous
ones (A'' == A'), at most n rounds (the paper: 5). "vanilla" always runs n rounds; "none" answers once.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from agent.controller import Capability

from .calls import CallParseError, Style, parse_reply

RefineMode = Literal["none", "adaptive", "vanilla"]
REFINE_MODES: tuple[RefineMode, ...] = ("none", "adaptive", "vanilla")
ROUNDS = 5
REFINE_INSTRUCTION = ("Above is your previous answer to this request. Check it against the request and the available "
                      "tools: if it is right, give it again unchanged; if not, give the corrected answer, in the same "
                      "format.")


def refine_prompt(prompt: str, previous: str) -> str:
    """The second turn: the request, the model's previous answer, the refine instruction."""
    return f"{prompt}\n\nYour previous answer:\n{previous.strip()}\n\n{REFINE_INSTRUCTION}\n"


def same_answer(a: str, b: str, style: Style, tools: Mapping[str, Any] | None = None) -> bool:
    """Parsed call lists compared (order-free, values canonical); two replies that do not parse compare as text."""
    try:
        calls_a, calls_b = parse_reply(a, style, tools), parse_reply(b, style, tools)
    except CallParseError:
        return a.strip() == b.strip()
    if not calls_a and not calls_b:  # two text answers (no call): the same when they say the same
        return a.strip() == b.strip()
    return sorted(c.key() for c in calls_a) == sorted(c.key() for c in calls_b)


class SelfRefine:
    """A controller that refines its own answers (the Controller protocol around another controller).

    `rounds_log` holds the refine rounds of each answer, for the mean the evaluator reports."""

    def __init__(self, inner, mode: RefineMode = "adaptive", rounds: int = ROUNDS, style: Style = "gpt4tools",
                 tools: Mapping[str, Any] | None = None):
        if mode not in REFINE_MODES:
            raise ValueError(f"refine mode must be one of {', '.join(REFINE_MODES)}")
        if rounds < 1:
            raise ValueError("rounds must be at least 1")
        self.inner, self.mode, self.rounds, self.style, self.tools = inner, mode, rounds, style, tools
        self.name = inner.name if mode == "none" else f"{inner.name} + {mode} self-refine"
        self.rounds_log: list[int] = []

    def answer(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
               grammar=None) -> tuple[str, int]:
        """(the final answer, how many refine rounds it took); every round under `grammar`, where there is one."""
        first = self.inner.generate(prompt, stop=stop, max_new_tokens=max_new_tokens, grammar=grammar)[0]
        if self.mode == "none":
            return first, 0
        current, used = first, 0
        for used in range(1, self.rounds + 1):
            refined = self.inner.generate(refine_prompt(prompt, current), stop=stop, max_new_tokens=max_new_tokens,
                                          grammar=grammar)[0]
            done = self.mode == "adaptive" and same_answer(current, refined, self.style, self.tools)
            current = refined
            if done:
                break
        return current, used

    def generate(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
                 temperature: float = 0.0, n: int = 1, grammar=None) -> list[str]:
        out = []
        for _ in range(n):
            text, used = self.answer(prompt, stop=stop, max_new_tokens=max_new_tokens, grammar=grammar)
            self.rounds_log.append(used)
            out.append(text)
        return out

    def stream(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
               temperature: float = 0.0, grammar=None) -> Iterator[str]:
        yield from self.generate(prompt, stop=stop, max_new_tokens=max_new_tokens, grammar=grammar)  # refined first

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        return self.inner.logprobs(prompt, continuation)

    @property
    def capabilities(self) -> Capability:
        return self.inner.capabilities & Capability.GRAMMAR  # each round goes under the grammar; nothing else is kept

    def mean_rounds(self) -> float:
        return sum(self.rounds_log) / len(self.rounds_log) if self.rounds_log else 0.0
