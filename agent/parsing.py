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
_SENTENCE = re.compile(r"\S.*?(?:[.!?]+(?=\s|$)|(?=\n)|$)")  # up to . ! ? before a space, or a line's end
_WORD = re.compile(r"\S+")
MIN_SENTENCE = 20  # characters: a shorter sentence ("Yes.", "Thank you.") may fairly come twice
SPAN_WORDS = 8  # words: a run this long said twice is a loop, punctuated or not


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


def trim_repetition(answer: str) -> str:
    """The answer cut before its first repeated sentence (of MIN_SENTENCE characters or more) or its first
    repeated run of SPAN_WORDS words, whichever comes first: a looping model's reply keeps its first copy."""
    cut, seen = len(answer), set()
    for match in _SENTENCE.finditer(answer):
        key = " ".join(match.group().casefold().split()).rstrip(".!?")
        if len(key) >= MIN_SENTENCE and key in seen:
            cut = match.start()
            break
        seen.add(key)
    words, runs = list(_WORD.finditer(answer)), set()
    for i in range(len(words) - SPAN_WORDS + 1):
        if words[i].start() >= cut:
            break
        run = tuple(w.group().strip(".,;:!?\"'").casefold() for w in words[i:i + SPAN_WORDS])
        if run in runs:
            cut = words[i].start()
            break
        runs.add(run)
    return answer[:cut].rstrip()
