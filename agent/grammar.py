"""The one grammar of a controller's step, built from the offered tools' names and `inputs` (GBNF text).

A reply is `Thought: Do I need to use a tool? ` then either `Yes` + `Action: ` one offered tool + `Action Input: `
arguments that fit that tool (an image is a file that exists in the session, a box is four numbers, text is free
on its line), or `No` + `AI:`. The answer after `AI:` is left free: the engine stops the grammar there and goes on
unconstrained on the cached prefix (a grammar checks the whole vocabulary at every token; the answer needs none).
Each engine applies the text by its own mechanism (llama.cpp's GBNF, llguidance for transformers, vLLM's
`structured_outputs`); the parser still reads anything, for engines that cannot constrain.

GBNF is written by hand here because no library builds it from our tool schemas; every string is escaped, so no
file name or tool name can make a grammar llama.cpp or llguidance fails to parse (tested with odd names).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .prompts import AI_PREFIX, QUESTION

THOUGHT = f"Thought: {QUESTION} "
FREE_AFTER = f"No\n{AI_PREFIX}:"  # a reply the grammar has brought this far continues without it

_RULES = {  # the argument kinds a tool's inputs can have, as GBNF rules
    "number": '"-"? [0-9] [0-9]? [0-9]? [0-9]? [0-9]? ("." [0-9] [0-9]? [0-9]?)?',  # bounded: a reply always ends
    "box": '"[" ws number "," ws number "," ws number "," ws number ws "]"',
    "ws": '" "?',
    "field": '[^,\\n]+',  # a text input followed by more inputs: up to the next comma
    "line": '[^\\n]+',  # the last text input: the rest of the line
    "rest": '[^\\n]*',  # what a tool without inputs may still be given
}


class InputLike(Protocol):
    name: str
    type: str
    optional: bool


class ToolSchema(Protocol):
    """What the grammar reads of a tool (visual_tools.Tool has it)."""
    name: str
    inputs: Sequence[InputLike]


@dataclass(frozen=True)
class Grammar:
    """A step's grammar as GBNF. `gbnf` stops at `free_after` (a reply brought there goes on unconstrained: the
    local engines); `whole` lets the answer run on inside the grammar (a server, asked once, returns the reply).
    A grammar with `free_after` None is the whole reply's."""
    gbnf: str
    free_after: str | None = FREE_AFTER

    @property
    def whole(self) -> str:
        free = literal(FREE_AFTER)
        return self.gbnf.replace(f"{free})", f"{free} answer)", 1) + "answer ::= [^\\x00]*\n"


def literal(text: str) -> str:
    """`text` as a GBNF string literal: quotes, backslashes and control characters escaped; other characters as
    UTF-8 (both parsers read it; llguidance's GBNF reader mangles `\\u` escapes)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char])
        elif ord(char) < 32 or ord(char) == 127:
            out.append(f"\\x{ord(char):02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _arguments(tool: ToolSchema, has_images: bool) -> str | None:
    """The rule body of a tool's Action Input, or None when it cannot be called (it needs an image, none exists)."""
    parts = []
    for position, spec in enumerate(tool.inputs):
        if spec.type == "image_path":
            if not has_images:
                return None
            parts.append("image")
        elif spec.type in ("number", "box"):
            parts.append(spec.type)
        elif spec.optional:
            parts.append("rest")  # an optional (last) text input: the rest of the line, or nothing
        else:
            parts.append("line" if position == len(tool.inputs) - 1 else "field")
    return ' ", " '.join(parts) if parts else "rest"


def build_grammar(tools: Sequence[ToolSchema], images: Sequence[str] = ()) -> Grammar:
    """The grammar of one step: `tools` are the offered tools, `images` the file names the session holds."""
    images = list(dict.fromkeys(images))
    calls = [(tool.name, body) for tool in tools if (body := _arguments(tool, bool(images))) is not None]
    yes = ""
    rules: dict[str, str] = {}
    if calls:
        rules["call"] = " | ".join(f"tool{i}" for i in range(len(calls)))
        for i, (name, body) in enumerate(calls):
            rules[f"tool{i}"] = f'{literal(name + chr(10) + "Action Input: ")} {body} "\\n"'
        yes = f'{literal("Yes" + chr(10) + "Action: ")} call | '
    root = f"{literal(THOUGHT)} ({yes}{literal(FREE_AFTER)})"
    if images:
        rules["image"] = " | ".join(literal(name) for name in images)
    rules.update(_RULES)  # unused rules are allowed; a rule referenced but missing is not
    lines = [f"root ::= {root}", *(f"{name} ::= {rule}" for name, rule in rules.items())]
    return Grammar("\n".join(lines) + "\n")
