"""The typed events one agent turn yields, in order; the UI and the CLI render them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Event:
    def to_dict(self) -> dict:
        return {"type": type(self).__name__, **asdict(self)}


@dataclass
class OfferEvent(Event):
    """What the turn's prompt offers: the shortlisted tools (of `available`), and whether replies are constrained."""
    tools: list[str]
    available: int
    grammar: bool
    direct: bool = False  # no tool is likely: the grammar allows only a direct answer


@dataclass
class DraftEvent(Event):
    """The model's text so far while it generates step `step` (for live display only)."""
    step: int
    text: str


@dataclass
class ThoughtEvent(Event):
    step: int
    text: str


@dataclass
class ToolCallEvent(Event):
    step: int
    tool: str
    tool_input: str


@dataclass
class ObservationEvent(Event):
    step: int
    tool: str | None
    text: str
    image: str | None = None
    duration: float = 0.0
    error: bool = False


@dataclass
class RetryEvent(Event):
    """Step `step`'s answer repeated an earlier one (`copied`): the turn starts again with only the uploads in view."""
    step: int
    copied: str


@dataclass
class MissingToolEvent(Event):
    """The request needs `tool`, which is not available here (`reason`: what it needs); `text` is the answer."""
    tool: str
    reason: str
    text: str


@dataclass
class AnswerEvent(Event):
    text: str
    images: list[str] = field(default_factory=list)


@dataclass
class ErrorEvent(Event):
    message: str
