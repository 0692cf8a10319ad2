"""Turn any model text into a Step, a Final answer or a ParseError (never an exception)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .controller import truncate_at
from .prompts import AI_PREFIX, STOP

_ACTION = re.compile(r"Action\s*:\s*(.*?)[\n]*\s*Action\s*Input\s*:[ \t]*(.*)")
_FORMAT_HINT = ("Use the format: 'Thought: Do I need to use a tool? Yes' / 'Action: <tool name>' / "
                "'Action Input: <input>', or 'Thought: Do I need to use a tool? No' / "
                f"'{AI_PREFIX}: <answer>'.")


@dataclass
class Step:
    thought: str
    tool: str
    tool_input: str


@dataclass
class Final:
    thought: str
    answer: str


@dataclass
class ParseError:
    text: str
    message: str


def _thought(text: str) -> str:
    head = text.strip()
    head = head[len("Thought:"):] if head.startswith("Thought:") else head
    return head.strip()


def parse_step(text: str) -> Step | Final | ParseError:
    """GPT4Tools/LangChain rules: `AI:` present -> final answer; else `Action: ... Action Input: ...`."""
    text = truncate_at(text, STOP)  # backends that ignore `stop` still parse
    marker = f"{AI_PREFIX}:"
    if marker in text:
        head, _, answer = text.rpartition(marker)
        answer = answer.strip()
        if answer:
            return Final(thought=_thought(head), answer=answer)
        return ParseError(text, f"Your answer after '{marker}' was empty. {_FORMAT_HINT}")
    match = _ACTION.search(text)
    if not match:
        return ParseError(text, f"Could not parse your last output. {_FORMAT_HINT}")
    tool = match.group(1).strip().strip("`'\"[]").strip()
    tool_input = match.group(2).strip().strip('"').strip()
    if not tool:
        return ParseError(text, f"The Action was empty. {_FORMAT_HINT}")
    return Step(thought=_thought(text[: match.start()]) or "Do I need to use a tool? Yes",
                tool=tool, tool_input=tool_input)
