"""Tool calls as data: `[t1(a1), ..., tm(am)]` with arguments as name -> value maps, parsed from two formats.

BFCL's python-call syntax `[func(a=1, b="x")]` is read by our own small scanner, not `ast.parse` of the whole
reply: ToolACE's function names contain spaces (`[Market Trends API(trend_type="INDEXES")]`). Only each
argument list goes through `ast`, and each value through `ast.literal_eval`.
"""
from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.parsing import Final, ParseError, parse_step

from ..data.render import split_args

Style = Literal["python", "gpt4tools"]


class CallParseError(ValueError):
    """A reply that tries to be a call list and is not one."""


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def pairs(self) -> set[tuple[str, str]]:
        """The (argument, value) pairs, values in a canonical JSON form (so lists and dicts compare)."""
        return {(key, json.dumps(value, sort_keys=True, default=str)) for key, value in self.args.items()}

    def key(self) -> tuple:
        return self.name, tuple(sorted(self.pairs()))


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets and string literals."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise CallParseError(f"unbalanced '{ch}'")
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    if quote or depth:
        raise CallParseError("an unclosed string or bracket")
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _value(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):  # a variable or an expression: its source text, as BFCL keeps it
        return ast.unparse(node)


def _parse_one(text: str) -> Call:
    name, paren, rest = text.partition("(")
    name = name.strip()
    if not paren or not name or not rest.rstrip().endswith(")"):
        raise CallParseError(f"'{text[:80]}' is not a call: name(arg=value, ...)")
    try:
        node = ast.parse(f"_f({rest.rstrip()[:-1]})", mode="eval").body
        if not isinstance(node, ast.Call) or node.args or any(k.arg is None for k in node.keywords):
            raise CallParseError(f"{name}: arguments must be given by name (name=value)")
        if len({k.arg for k in node.keywords}) < len(node.keywords):
            raise CallParseError(f"{name}: an argument is given twice")
        return Call(name, {k.arg: _value(k.value) for k in node.keywords})
    except SyntaxError as exc:
        raise CallParseError(f"the arguments of {name} do not parse: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):  # absurdly nested or huge replies
        raise CallParseError(f"the arguments of {name} are too deeply nested or too large") from None


def parse_calls(text: str) -> list[Call]:
    """A reply in BFCL's python-call syntax -> calls; a plain text reply (no call) -> [].

    Raises CallParseError when the reply starts a call list (`[`) or a bare call (`name(...)`) and breaks it.
    """
    body = text.strip().strip("`").strip()
    if body.startswith("python\n"):
        body = body[len("python\n"):].strip()
    if not body:
        return []
    if body.startswith("["):
        if not body.endswith("]"):
            raise CallParseError("the call list is not closed with ']'")
        inner = body[1:-1].strip()
        return [_parse_one(part) for part in _split_top_level(inner)] if inner else []
    head = body.split("(", 1)[0]
    if "(" in body and body.endswith(")") and head.strip() and len(head) <= 64 and "\n" not in head:
        return [_parse_one(part) for part in _split_top_level(body)]  # bare calls, as BFCL's decoder allows
    return []


def format_calls(calls: list[Call]) -> str:
    """Calls in BFCL's python-call syntax (the training target)."""
    def value(v: Any) -> str:
        return repr(v) if not isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return "[" + ", ".join(f"{c.name}(" + ", ".join(f"{k}={value(v)}" for k, v in c.args.items()) + ")"
                           for c in calls) + "]"


def positional_call(name: str, values: list[str], tools: Mapping[str, Any] | None = None) -> Call:
    """A GPT4Tools call (positional inputs) with its inputs named by the tool's `inputs` (arg0, arg1, … when the
    tool is unknown or the count differs)."""
    tool = (tools or {}).get(name)
    names = [i.name for i in tool.inputs] if tool is not None and len(tool.inputs) == len(values) \
        else [f"arg{i}" for i in range(len(values))]
    return Call(name, dict(zip(names, values)))


def parse_step_call(text: str, tools: Mapping[str, Any] | None = None) -> list[Call]:
    """One GPT4Tools step -> [the call] (positional inputs named by the tool's inputs); a final answer -> []."""
    parsed = parse_step(text)
    if isinstance(parsed, ParseError):
        raise CallParseError(parsed.message)
    if isinstance(parsed, Final):
        return []
    return [positional_call(parsed.tool, split_args(parsed.tool_input, parsed.tool, tools), tools)]


def parse_reply(text: str, style: Style, tools: Mapping[str, Any] | None = None) -> list[Call]:
    return parse_calls(text) if style == "python" else parse_step_call(text, tools)
