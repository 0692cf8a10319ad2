"""Which controller to run (`ControllerSpec`, made once from flags or the Chat's controls) and loading it.

A spec's *kind* says where the model comes from (the embedded SmolLM2, a transformers hub id or folder, an
OpenAI-compatible server); its *engine* says what runs it. `ENGINES` lists the engines, in order of preference,
with the class each runs (whose `capabilities` say what it can serve) and the kinds it takes. A new engine is its
class, one row, and its branch where its kind is loaded (`load_controller`; `agent.embedded.load_embedded`, which
also decides "auto" by trying llama.cpp first, for the embedded model).
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, replace
from importlib import import_module
from pathlib import Path
from typing import Literal, get_args

from .controller import Capability, Controller, ControllerError
from .embedded import ADAPTER_DIR, NO_ADAPTER, load_embedded
from .prompts import DEFAULT_TEMPLATE, TEMPLATES

Kind = Literal["embedded", "transformers", "openai"]
KINDS: tuple[Kind, ...] = get_args(Kind)


@dataclass(frozen=True)
class Engine:
    """A row of the engine table: the controller class it runs and the kinds of spec it takes."""
    controller: str  # "module:Class", imported only when its capabilities are asked for
    kinds: tuple[Kind, ...]

    def capabilities(self) -> Capability:
        module, name = self.controller.split(":")
        return getattr(import_module(module), name).capabilities


ENGINES: dict[str, Engine] = {  # "auto": the first of a kind's engines that runs here
    "llama.cpp": Engine("agent.llama_cpp_controller:LlamaCppController", ("embedded",)),
    "transformers": Engine("agent.hf_controller:TransformersController", ("embedded", "transformers")),
    "openai": Engine("agent.openai_controller:OpenAIController", ("openai",)),
}
ENGINE_CHOICES = ("auto", *ENGINES)


def engines_for(kind: Kind) -> list[str]:
    return [name for name, engine in ENGINES.items() if kind in engine.kinds]


@dataclass(frozen=True)
class ControllerSpec:
    """A controller, checked and normalised when made (a bad one raises ControllerError); the pool's key.

    `location`: the hub id or folder (transformers), the `…/v1[#model]` URL (openai), "" (embedded).
    `adapter`: a LoRA folder; "none" (embedded): not even the shipped one. `engine`: one of the kind's engines
    or "auto"; left out, the embedded kind takes $TOOLSMITH_ENGINE, else "auto"."""
    kind: Kind = "embedded"
    location: str = ""
    adapter: str | None = None
    engine: str | None = None

    def __post_init__(self) -> None:
        location, adapter = self.location.strip(), (self.adapter or "").strip() or None
        if self.kind not in KINDS:
            raise ControllerError(f"unknown controller kind '{self.kind}': one of {', '.join(KINDS)}")
        url = location.startswith(("http://", "https://"))
        if self.kind == "embedded":
            location = ""
        elif not location:
            raise ControllerError("Enter a model id, folder or URL.")
        elif self.kind == "openai" and not url:
            raise ControllerError(f"'{location}' is not an OpenAI-compatible URL: enter http(s)://host:port/v1, "
                                  "optionally followed by #model")
        elif self.kind == "transformers" and url:
            raise ControllerError(f"'{location}' is a URL: choose the OpenAI-compatible backend to use a server")
        if self.kind != "embedded" and adapter == NO_ADAPTER:
            adapter = None
        if self.kind == "openai" and adapter:
            raise ControllerError("an adapter cannot be applied to a remote controller; load it on the server")
        ours = engines_for(self.kind)
        engine = self.engine or (os.environ.get("TOOLSMITH_ENGINE") if self.kind == "embedded" else None) or "auto"
        if engine == "auto" and len(ours) == 1:
            engine = ours[0]
        if engine not in ("auto", *ours):
            raise ControllerError(f"unknown engine '{engine}' for the {self.kind} controller: one of auto, "
                                  + ", ".join(ours))
        for name, value in (("location", location), ("adapter", adapter), ("engine", engine)):
            object.__setattr__(self, name, value)

    @classmethod
    def parse(cls, text: str = "embedded", adapter: str | None = None, engine: str | None = None) -> ControllerSpec:
        """A `--controller` value: "embedded", an http(s) URL (optionally `#model`), or a hub id or folder."""
        text = text.strip()
        kind: Kind = ("embedded" if text == "embedded" else
                      "openai" if text.startswith(("http://", "https://")) else "transformers")
        return cls(kind, text, adapter, engine)

    @property
    def template(self) -> str:
        """The prompt template the adapter was trained with (its `toolsmith.json`'s "prompt"; gpt4tools without one,
        and for a model without an adapter): chat, data rendering and evaluation render prompts in it."""
        return adapter_template(ADAPTER_DIR if self.kind == "embedded" and self.adapter is None else self.adapter)

    @property
    def text(self) -> str:
        """The `--controller` value `parse` reads back into this spec (with `adapter` and `engine`)."""
        return self.location or self.kind


def adapter_template(adapter: str | os.PathLike | None) -> str:
    """The template recorded beside an adapter folder; gpt4tools where it records none (or there is no adapter)."""
    if adapter is None or str(adapter) == NO_ADAPTER:
        return DEFAULT_TEMPLATE
    try:
        template = json.loads((Path(adapter) / "toolsmith.json").read_text()).get("prompt", DEFAULT_TEMPLATE)
    except (OSError, ValueError):
        return DEFAULT_TEMPLATE
    if template not in TEMPLATES:
        raise ControllerError(f"adapter '{adapter}' records an unknown prompt template '{template}': one of "
                              + ", ".join(TEMPLATES))
    return template


def default_template(base: str, init_adapter: str | None = None) -> str:
    """The template a new adapter is trained in: the one it continues from, else compact for the embedded model
    (short prompts: several times the conversations per CPU round), gpt4tools for any other base."""
    if init_adapter:
        return adapter_template(init_adapter)
    return "compact" if base == "embedded" else DEFAULT_TEMPLATE


def add_engine_flag(parser: argparse.ArgumentParser) -> None:
    """`--engine`, for every command that loads a controller."""
    parser.add_argument("--engine", choices=ENGINE_CHOICES, default=None,
                        help="what runs the controller: for the embedded one llama.cpp or transformers (default: "
                             "$TOOLSMITH_ENGINE, else auto: llama.cpp where it is installed, else transformers); a "
                             "hub id or folder runs on transformers, a URL on openai")


def engine_of(controller: Controller) -> str | None:
    """The row of ENGINES that runs this controller (what "auto" resolved to)."""
    cls = f"{type(controller).__module__}:{type(controller).__name__}"
    return next((name for name, engine in ENGINES.items() if engine.controller == cls), None)


def with_capability(spec: ControllerSpec, need: Capability) -> ControllerSpec | None:
    """`spec` on another engine of its kind whose controllers have `need`, or None where none has."""
    return next((replace(spec, engine=name) for name in engines_for(spec.kind)
                 if name != spec.engine and need in ENGINES[name].capabilities()), None)


def load_controller(spec: ControllerSpec, **options) -> Controller:
    """The controller `spec` names (raises ControllerError). `options` go to the engine: 8-/4-bit and `device_map`
    to transformers, `timeout` and `max_retries` to openai."""
    if spec.kind == "embedded":
        return load_embedded(spec.adapter, spec.engine, **options)
    if spec.kind == "openai":
        from .openai_controller import OpenAIController
        url, _, model = spec.location.partition("#")
        return OpenAIController(url, model=model or None, **options)
    from .hf_controller import TransformersController
    return TransformersController.from_pretrained(spec.location, adapter=spec.adapter, **options)
