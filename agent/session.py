"""One user's conversation: history, images, and the turn runner shared by the UI and the CLI."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from visual_tools import ImageStore, ToolRegistry

from .events import AnswerEvent, ErrorEvent, Event
from .loop import STOPPED, Agent
from .prompts import Turn, image_turn


@dataclass
class ChatSession:
    store: ImageStore = field(default_factory=ImageStore.new_session)
    history: list[Turn] = field(default_factory=list)

    def add_image(self, source: str | Path, registry: ToolRegistry) -> str:
        """Store an upload and add GPT4Tools' 'Provide an image named ...' turn; returns its name.

        Raises ImageInputError for a file that is not a readable image.
        """
        name = self.store.save_upload(source)
        self.history.append(image_turn(name, describe(name, self.store, registry)))
        return name

    def send(self, agent: Agent, text: str) -> Iterator[Event]:
        """Run one turn and record it in the history, even when it errs or is cut short."""
        answer = STOPPED
        try:
            for event in agent.run(text, self.history, self.store):
                if isinstance(event, AnswerEvent):
                    answer = event.text
                elif isinstance(event, ErrorEvent):
                    answer = event.message
                yield event
        finally:
            self.history.append(Turn(text, answer))

    def undo(self) -> None:
        if self.history:
            self.history.pop()


def describe(name: str, store: ImageStore, registry: ToolRegistry) -> str | None:
    """The upload's caption from BLIP when it is here, else None (the offline classifier's object names are not
    a description: the model asks for them by calling the tool)."""
    captioner = registry.by_class("ImageCaptioning")
    if captioner is None or not captioner.captions():
        return None
    try:
        return str(captioner(image_path=store.resolve(name)))
    except Exception:  # a caption is a nicety: the upload still counts without one
        return None


