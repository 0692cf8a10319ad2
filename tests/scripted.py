"""A real controller with canned replies: drives the loop and the app deterministically."""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

from agent.controller import Capability, truncate_at

Reply = str | Callable[[str], str]  # a fixed text, or a function of the prompt


class ScriptedController:
    """Replies in order (cycling); each reply may be a function of the prompt it answers."""

    name = "scripted"
    capabilities = Capability.GRAMMAR  # it records the grammar each reply was asked under

    def __init__(self, replies: Sequence[Reply]):
        self._replies = itertools.cycle(replies)
        self.prompts: list[str] = []
        self.grammars: list = []  # the grammar each reply was asked under (None: unconstrained)

    def generate(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
                 temperature: float = 0.0, n: int = 1, grammar=None) -> list[str]:
        self.prompts.append(prompt)
        self.grammars.append(grammar)
        reply = next(self._replies)
        text = reply(prompt) if callable(reply) else reply
        return [truncate_at(text, stop)] * n

    def stream(self, prompt: str, **kwargs) -> Iterator[str]:
        text = self.generate(prompt, **kwargs)[0]
        for i in range(0, len(text), 7):
            yield text[i:i + 7]

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        return [-1.0] * len(continuation.split())


def last_image(prompt: str) -> str:
    """The most recent image name in a prompt (what a tuned model copies from its context)."""
    import re
    return re.findall(r"image/[0-9a-f_a-z-]+\.png", prompt)[-1]


def canny_then_answer() -> list[Reply]:
    """Call Edge Detection on the last image, then answer with the new file name."""
    return [
        lambda p: ("Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\n"
                   f"Action Input: {last_image(p)}\nObservation: (the model must not write this)"),
        lambda p: f"Thought: Do I need to use a tool? No\nAI: Here are the edges: {last_image(p)}",
    ]
