"""Run one tool call the way the agent writes it: parse the Action Input, resolve images, save outputs."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from PIL import Image

from .base import Tool
from .image_store import ImageStore


@dataclass
class ToolResult:
    text: str  # the Observation the model reads: the answer, or the new image's name
    image: str | None = None


class ToolTimeout(RuntimeError):
    """A tool call that did not return in time; the message is the model's Observation."""


def invoke(tool: Tool, action_input: str, store: ImageStore, timeout: float | None = None) -> ToolResult:
    """Parse, resolve and call; raises ToolInputError for inputs the model can correct, ToolTimeout after
    `timeout` seconds (the call is left to finish in its thread, its result dropped)."""
    named = tool.parse_input(action_input)
    args, parent = {}, None
    for spec in tool.inputs:
        if spec.type == "image_path":
            args[spec.name] = path = store.resolve(named[spec.name])
            parent = parent or f"image/{path.name}"
        elif spec.name in named:  # an optional input left out stays out
            args[spec.name] = named[spec.name]
    out = tool(**args) if timeout is None else _call_with_timeout(tool, args, timeout)
    out, note = out if isinstance(out, tuple) else (out, "")
    if isinstance(out, Image.Image):
        name = store.save_output(out, tool.op, parent)
        return ToolResult(text=f"{name} ({note})" if note else name, image=name)
    return ToolResult(text=str(out))


def _call_with_timeout(tool: Tool, args: dict[str, Any], timeout: float) -> Any:
    # A thread, not a process: the tool's model stays loaded in this process. Python cannot stop a thread,
    # so a hung call keeps running in the background; the turn goes on without it.
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["out"] = tool(**args)
        except BaseException as exc:  # handed to the caller's thread below
            result["error"] = exc

    worker = threading.Thread(target=target, name=f"tool-{tool.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ToolTimeout(f"{tool.name} did not answer within {timeout:g} s; its result will be ignored")
    if "error" in result:
        raise result["error"]
    return result["out"]
