"""Run one tool call the way the agent writes it: parse the Action Input, resolve images, save outputs."""
from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from .base import Tool
from .image_store import ImageStore


@dataclass
class ToolResult:
    text: str  # the Observation the model reads: the answer, or the new image's name
    image: str | None = None


def invoke(tool: Tool, action_input: str, store: ImageStore) -> ToolResult:
    """Parse, resolve and call; raises ToolInputError for inputs the model can correct."""
    named = tool.parse_input(action_input)
    args, parent = {}, None
    for spec in tool.inputs:
        if spec.type == "image_path":
            args[spec.name] = path = store.resolve(named[spec.name])
            parent = parent or f"image/{path.name}"
        else:
            args[spec.name] = named[spec.name]
    out = tool(**args)
    if isinstance(out, Image.Image):
        name = store.save_output(out, tool.op, parent)
        return ToolResult(text=name, image=name)
    return ToolResult(text=str(out))
