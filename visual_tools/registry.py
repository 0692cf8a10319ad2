"""Which tools exist (found in this package's modules), which load where (`--load "Class_device,..."`), and name
look-up for the agent."""
from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable

from .base import Tool, ToolInputError

# The order prompts list the tools in (GPT4Tools' first): the shipped adapter was trained on it. A tool not named
# here follows them, in the order `discover` finds it.
ORDER = ("ImageCaptioning", "VisualQuestionAnswering", "Image2Canny", "Image2Line", "Image2Scribble", "Image2Pose",
         "CropImage", "TextDetection", "FaceDetection", "SuperResolution", "Text2Image", "InstructPix2Pix",
         "CannyText2Image", "LineText2Image", "HedText2Image", "ScribbleText2Image", "PoseText2Image", "SegText2Image",
         "DepthText2Image", "NormalText2Image", "Image2Depth", "Image2Normal", "Segmenting", "Text2Box",
         "ObjectSegmenting", "ReplaceSomething", "RemoveSomething", "Detection", "Text2Shape", "Image2Seg", "Image2Hed",
         "Calculator", "Calendar", "WikiSearch", "QA", "MT")
NOT_TOOLS = ("__main__", "registry", "ui")  # modules that import the registry or run a command; and any "_name"


def discover() -> dict[str, type[Tool]]:
    """Every tool class, by class name: each class that declares its own `name` in a module of this package (modules
    alphabetically, classes as defined), ordered by ORDER."""
    found: dict[str, type[Tool]] = {}
    for module_info in pkgutil.iter_modules(importlib.import_module(__package__).__path__):
        if module_info.name in NOT_TOOLS or module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__package__}.{module_info.name}")
        for cls in [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Tool)
                    and c.__module__ == module.__name__ and "name" in vars(c)]:
            if found.setdefault(cls.__name__, cls) is not cls:
                raise TypeError(f"two tool classes are named {cls.__name__}: --load names a tool by its class")
    rank = {name: i for i, name in enumerate(ORDER)}
    return dict(sorted(found.items(), key=lambda item: rank.get(item[0], len(ORDER))))


TOOL_CLASSES = discover()
TEXT_TOOL_CLASSES: dict[str, type[Tool]] = {  # Toolformer's text tools: neither take nor make an image
    name: cls for name, cls in TOOL_CLASSES.items() if "image_path" not in (cls.output, *(i.type for i in cls.inputs))}
VISUAL_TOOL_CLASSES = {name: cls for name, cls in TOOL_CLASSES.items() if name not in TEXT_TOOL_CLASSES}


def default_device() -> str:
    import torch
    return "cuda:0" if torch.cuda.is_available() else "cpu"


def parse_load(spec: str | None) -> dict[str, str]:
    """`"ImageCaptioning_cuda:0,Image2Canny_cpu"` -> {class name: device}; None/"" -> every tool.

    A tool that reuses another's models (`requires`) brings it along on the same device.
    """
    if not spec:
        return {name: default_device() for name in TOOL_CLASSES}
    load: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, device = item.partition("_")
        if not sep or not re.fullmatch(r"cpu|cuda(:\d+)?|mps", device):
            raise ValueError(f"--load item '{item}' must look like ClassName_cpu or ClassName_cuda:0")
        if name not in TOOL_CLASSES:
            raise ValueError(f"unknown tool class '{name}'; known: {', '.join(TOOL_CLASSES)}")
        load[name] = device
    pending = list(load)
    while pending:  # what the loaded tools require, and what that requires, on the same device
        name = pending.pop()
        for required in TOOL_CLASSES[name].requires:
            if required not in load:
                load[required] = load[name]
                pending.append(required)
    return load


def memory_text(info: dict) -> str:
    """A tool's weights for people: measured once loaded, else the float16 estimate; and the tools it shares."""
    def size(mb: float) -> str:
        return f"{mb / 1000:.1f} GB" if mb >= 100 else f"{mb:.0f} MB" if mb >= 1 else f"{mb:.2f} MB"

    if info["loaded_mb"]:
        text = f"{size(info['loaded_mb'])} loaded"
    elif info["gpu_estimate_mb"] is None:
        text = "? (not the default checkpoint)"
    else:
        text = f"≈ {size(info['gpu_estimate_mb'])}" if info["gpu_estimate_mb"] else ""
    shares = f"shares {', '.join(info['requires'])}" if info["requires"] else ""
    return ", ".join(part for part in (text, shares) if part) or "–"


class UnknownToolError(ToolInputError):
    pass


def _normalise(name: str) -> str:
    return " ".join(name.split()).casefold()


class ToolRegistry:
    """The loaded tools of one app; the prompt, the agent and the UIs all read names from here."""

    def __init__(self, tools: Iterable[Tool]):
        self.tools = {tool.name: tool for tool in tools}
        for tool in self.tools.values():
            tool.parts = {name: part for name in tool.requires if (part := self.by_class(name)) is not None}

    @classmethod
    def from_load(cls, spec: str | None = None, checkpoints: dict[str, str] | None = None) -> "ToolRegistry":
        checkpoints = checkpoints or {}
        return cls(TOOL_CLASSES[name](device, checkpoints.get(name)) for name, device in parse_load(spec).items())

    def all(self) -> list[Tool]:
        return list(self.tools.values())

    def available(self) -> list[Tool]:
        return [tool for tool in self.tools.values() if tool.availability()[0]]

    def get(self, name: str) -> Tool:
        """Exact name first, then case- and space-insensitive; unknown or unavailable names raise."""
        tool = self.tools.get(name.strip())
        if tool is None:
            matches = [t for t in self.tools.values() if _normalise(t.name) == _normalise(name)]
            tool = matches[0] if matches else None
        offered = ", ".join(t.name for t in self.available())
        if tool is None:
            raise UnknownToolError(f"'{name.strip()}' is not a valid tool, try one of [{offered}].")
        ok, reason = tool.availability()
        if not ok:
            raise UnknownToolError(f"'{tool.name}' is unavailable here ({reason}); try one of [{offered}].")
        return tool

    def gpu_estimate_mb(self) -> float:
        """Approximate float16 weights of every tool here, each model counted once (unknown sizes count 0)."""
        return sum(tool.gpu_estimate_mb() or 0.0 for tool in self.tools.values())

    def by_class(self, class_name: str) -> Tool | None:
        return next((t for t in self.tools.values() if type(t).__name__ == class_name), None)
