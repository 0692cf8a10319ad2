"""Teachers that write instructions for an image: any controller LLM, or the offline template teacher.

Every teacher answers GPT4Tools' generation prompt in its list format, one instruction per line:
`N. instruction, [tool name, example.jpg, other arguments]`; the same parser reads them all.
"""
from __future__ import annotations

import functools
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from agent.controller import Controller, ControllerError
from agent.factory import ControllerSpec, load_controller
from visual_tools import Tool

from . import templates
from .templates import ARG_SLOTS

EXAMPLE_IMAGE = "example.jpg"  # the prompt's stand-in for the image, replaced by the record's image name


@dataclass
class Annotation:
    """What is known about an image's content: a caption, object boxes, text read from it."""
    caption: str = ""
    objects: dict[str, list[int]] = field(default_factory=dict)
    text: str = ""

    def describe(self) -> str:
        boxes = "; ".join(f"{name} {box}" for name, box in self.objects.items())
        return ". ".join(part for part in (self.caption, boxes and f"Objects: {boxes}",
                                           self.text and f"Text in the image: {self.text}") if part)


@dataclass
class TeacherRequest:
    prompt: str  # GPT4Tools' generation prompt, filled in
    annotation: Annotation
    tools: list[Tool]
    n: int
    seed: int


class TeacherFailed(RuntimeError):
    """The teacher gave no reply after its retries; the job is counted as failed and retried on a rerun."""


class Teacher(Protocol):
    name: str

    def instruct(self, request: TeacherRequest) -> str: ...


class LLMTeacher:
    """A controller LLM as teacher: an OpenAI-compatible server (GPT-4-class, vLLM) or a local model.

    HTTP retries with back-off on 429/5xx and time-outs are the openai client's (`retries`);
    `rpm` spaces requests out so a run stays under a provider's rate limit.
    """

    def __init__(self, controller: Controller, rpm: float = 0.0, max_new_tokens: int = 1536,
                 temperature: float = 0.7):
        self.controller, self.name = controller, controller.name
        self.interval = 60.0 / rpm if rpm > 0 else 0.0
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self._next, self._lock = 0.0, threading.Lock()

    def _wait_turn(self) -> None:
        with self._lock:
            now = time.monotonic()
            wait, self._next = max(0.0, self._next - now), max(now, self._next) + self.interval
        time.sleep(wait)

    def instruct(self, request: TeacherRequest) -> str:
        self._wait_turn()
        try:
            return self.controller.generate(request.prompt, max_new_tokens=self.max_new_tokens,
                                            temperature=self.temperature)[0]
        except ControllerError as exc:
            raise TeacherFailed(str(exc)) from None


class TemplateTeacher:
    """Offline: composes varied instructions from the tools' `phrasings` and the image's annotation."""

    name = "template"

    def instruct(self, request: TeacherRequest) -> str:
        rng = random.Random(request.seed)
        objects = list(request.annotation.objects) or ["main object"]
        tools = list(request.tools)
        rng.shuffle(tools)
        lines = []
        for i in range(request.n):
            tool = tools[i % len(tools)]
            obj = rng.choice(objects)
            style = rng.choice(templates.STYLES)
            slots = {"object": obj, "new": rng.choice(templates.NEW_OBJECTS), "scene": rng.choice(templates.SCENES),
                     "style": style, "style_lower": style[0].lower() + style[1:],
                     "question": rng.choice(templates.QUESTIONS).format(object=obj),
                     "box": str(request.annotation.objects.get(obj, [0, 0, 256, 256])),
                     "region": rng.choice(list(templates.REGIONS)),
                     "topic": rng.choice(_topics())}
            phrasing = rng.choice(tool.phrasings)
            slots.update(_box_slots(phrasing, rng, slots["region"]))
            slots.update(_arithmetic_slots(phrasing, rng))
            instruction = phrasing.format(**slots)
            args = [EXAMPLE_IMAGE if spec.type == "image_path"
                    else slots[tool.arg_slots.get(spec.name) or ARG_SLOTS.get(spec.name, "scene")]
                    for spec in tool.inputs]
            lines.append(f"{i + 1}. {instruction}, [{', '.join([tool.name, *args])}]")
        return "\n".join(lines)


@functools.cache
def _topics() -> list[str]:
    """The titles of the WikiSearch tool's corpus, less those the hand-written evaluation asks about."""
    from visual_tools.text_tools import DEFAULT_CORPUS, read_rows
    return [row["title"] for row in read_rows(DEFAULT_CORPUS) if row.get("title") not in templates.TOPICS_HELD_OUT]


def _box_slots(phrasing: str, rng: random.Random, region: str) -> dict[str, str]:
    """The box a crop phrasing states, and `box` as the tool takes it: `[x1, y1, x2, y2]`."""
    if "{region}" in phrasing:
        return {"box": templates.REGIONS[region]}
    if "{fbox}" in phrasing:
        x1, x2 = sorted(rng.sample(templates.FRACTIONS, 2))
        y1, y2 = sorted(rng.sample(templates.FRACTIONS, 2))
        box = f"[{x1}, {y1}, {x2}, {y2}]"
        return {"fbox": box, "box": box}
    if "{x1}" in phrasing or "{box}" in phrasing and "{object}" not in phrasing:
        x1, y1 = rng.randrange(0, 300, rng.choice((1, 5, 10))), rng.randrange(0, 300, rng.choice((1, 5, 10)))
        w, h = rng.randrange(40, 300, rng.choice((1, 4, 10))), rng.randrange(40, 300, rng.choice((1, 4, 10)))
        x2, y2 = x1 + w, y1 + h
        return {"x1": str(x1), "y1": str(y1), "x2": str(x2), "y2": str(y2), "w": str(w), "h": str(h),
                "box": f"[{x1}, {y1}, {x2}, {y2}]"}
    return {}


def _arithmetic_slots(phrasing: str, rng: random.Random) -> dict[str, str]:
    """Numbers and the expression the Calculator gets; a phrasing that says the operation decides it, and one
    that spells the numbers out gets small whole numbers."""
    spelt = "_words}" in phrasing
    if spelt:
        a, b = rng.randint(2, len(templates.NUMBER_WORDS) - 1), rng.randint(2, len(templates.NUMBER_WORDS) - 1)
    else:
        a = rng.choice([rng.randint(2, 99), rng.randint(100, 9999), round(rng.uniform(1, 500), 2)])
        b = rng.randint(2, 60)
    op = next((o for w, o in templates.OPERATION_WORDS.items() if w in phrasing), rng.choice(templates.ARITHMETIC))
    if op == "-" and a < b:
        a, b = b, a
    words = {"a_words": templates.NUMBER_WORDS[a], "b_words": templates.NUMBER_WORDS[b]} if spelt else {}
    return {"a": str(a), "b": str(b), "expression": f"{a} {op} {b}", **words}


def load_teacher(spec: str, rpm: float = 0.0, timeout: float = 120.0, retries: int = 3,
                 engine: str | None = None) -> Teacher:
    """`template`, or a `--controller` value: an `http(s)://…/v1[#model]` URL, `embedded`, a model id / folder."""
    if spec == "template":
        return TemplateTeacher()
    controller = ControllerSpec.parse(spec, engine=engine)
    http = {"timeout": timeout, "max_retries": retries} if controller.kind == "openai" else {}
    return LLMTeacher(load_controller(controller, **http), rpm)
