"""Multi-turn evaluation: hand-written conversations run turn by turn through the chat's own session and agent,
each turn scored by GPT4Tools' SR and a strict success, with the answers that repeat an earlier one counted.

A conversation is `{"id", "turns": [{"upload": path} | {"input", "kind", "gold": [{"tool", "args"}], "answer"?}]}`;
an argument `$upload1` is the conversation's first upload, `$last` the newest image there is when the turn starts
(the last one made, else the last upload). A turn whose gold tool is not available here is right when the agent
answers with what it needs (`MissingToolEvent`), whatever absent tool it names. A Calculator or Calendar argument
is right when the tool computes the same from it ("1 January 2000" for 2000-01-01, "48 * 12" for 48*12).
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.history import plain
from agent.events import AnswerEvent, ErrorEvent, MissingToolEvent, ObservationEvent, RetryEvent, ToolCallEvent
from agent.loop import Agent
from agent.session import ChatSession
from visual_tools import ImageStore, Tool, ToolInputError, ToolRegistry

from .metrics import score

ROOT = Path(__file__).resolve().parents[2]
CONVERSATIONS = ROOT / "assets" / "eval" / "conversations" / "multiturn.jsonl"


@dataclass
class TurnResult:
    conversation: str
    turn: int  # 1 for the first request of its conversation (uploads are not counted)
    kind: str
    input: str
    answer: str
    calls: list[str]  # "Tool: input" of each call made
    unavailable: bool  # its gold tool is not available here
    missing: str | None  # the tool the agent said was missing, if it did
    success: bool  # GPT4Tools' SR (images only need to be a .png), or the missing-tool answer where unavailable
    strict: bool  # also: each image argument the file meant, and the answer says what `answer` expects
    repeated: bool  # the answer is word for word one given earlier in the conversation
    seconds: float


def load_conversations(path: str | Path = CONVERSATIONS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


VALUE_TOOLS = ("Calculator", "Calendar")  # an argument is right when the tool computes the same from it


def _same_result(tool: Tool, a: str, b: str) -> bool:
    try:
        return tool(**tool.parse_input(a)) == tool(**tool.parse_input(b))
    except ToolInputError:
        return False


def trace(calls: list[tuple[str, str]], answer: str) -> str:
    steps = "".join(f"Thought: Do I need to use a tool? Yes\nAction: {tool}\nAction Input: {arg}\nObservation: x\n"
                    for tool, arg in calls)
    return steps + f"Thought: Do I need to use a tool? No\nAI: {answer}"


def run_conversation(conversation: dict[str, Any], agent: Agent, registry: ToolRegistry,
                     store: ImageStore | None = None) -> list[TurnResult]:
    session = ChatSession(store=store) if store else ChatSession()
    available = {t.name for t in registry.available()}
    uploads: list[str] = []
    last: str | None = None
    said: list[str] = []
    results = []
    for turn in conversation["turns"]:
        if "upload" in turn:
            last = session.add_image(ROOT / turn["upload"], registry)
            uploads.append(last)
            continue
        names = {"$last": last or "", **{f"$upload{i + 1}": n for i, n in enumerate(uploads)}}
        gold = [(s["tool"], ", ".join(names.get(a, a) for a in s["args"])) for s in turn["gold"]]
        calls, answer, missing, started = [], "", None, time.monotonic()
        for event in session.send(agent, turn["input"]):
            if isinstance(event, RetryEvent):
                calls = []  # the turn starts again: what it called before does not count
            elif isinstance(event, ToolCallEvent):
                calls.append((event.tool, event.tool_input))
            elif isinstance(event, ObservationEvent) and event.image:
                last = event.image
            elif isinstance(event, MissingToolEvent):
                missing = event.tool
            elif isinstance(event, AnswerEvent):
                answer = event.text
            elif isinstance(event, ErrorEvent):
                answer = event.message
        unavailable = any(tool not in available for tool, _ in gold)
        gold = [(t, calls[i][1] if t in VALUE_TOOLS and i < len(calls) and calls[i][0] == t
                 and _same_result(registry.tools[t], arg, calls[i][1]) else arg) for i, (t, arg) in enumerate(gold)]
        if unavailable:
            success = strict = missing is not None
        else:
            expected, got = trace(gold, ""), trace(calls, answer)
            success = missing is None and score(expected, got).success == 1.0
            strict = (missing is None and score(expected, got, strict_images=True).success == 1.0
                      and all(re.search(re.escape(a), answer, re.I) for a in turn.get("answer", [])))
        results.append(TurnResult(conversation["id"], len(results) + 1, turn["kind"], turn["input"], answer,
                                  [f"{t}: {a}" for t, a in calls], unavailable, missing, success, strict,
                                  plain(answer) in said, time.monotonic() - started))
        said.append(plain(answer))
    return results


def evaluate_conversations(conversations: Iterable[dict[str, Any]], make_agent: Callable[[], Agent],
                           registry: ToolRegistry) -> list[TurnResult]:
    return [r for c in conversations for r in run_conversation(c, make_agent(), registry)]


def _pct(flags: list[bool]) -> str:
    return f"{100 * sum(flags) / len(flags):.1f}" if flags else "–"


def summary(results: list[TurnResult]) -> str:
    """Markdown: SR and strict per turn number, then per kind; repeats and unavailable-tool answers below."""
    lines = ["| turn | turns | SR | strict | repeated |", "|---|---|---|---|---|"]
    for n in sorted({r.turn for r in results}):
        rows = [r for r in results if r.turn == n]
        lines.append(f"| {n} | {len(rows)} | {_pct([r.success for r in rows])} | {_pct([r.strict for r in rows])} | "
                     f"{sum(r.repeated for r in rows)} |")
    later = [r for r in results if r.turn >= 2]
    for label, rows in (("turns ≥ 2", later), ("all", results)):
        lines.append(f"| {label} | {len(rows)} | {_pct([r.success for r in rows])} | {_pct([r.strict for r in rows])} "
                     f"| {sum(r.repeated for r in rows)} |")
    lines += ["", "| kind | turns | SR | strict |", "|---|---|---|---|"]
    for kind in sorted({r.kind for r in results}):
        rows = [r for r in results if r.kind == kind]
        lines.append(f"| {kind} | {len(rows)} | {_pct([r.success for r in rows])} | {_pct([r.strict for r in rows])} |")
    absent = [r for r in results if r.unavailable]
    alarms = sum(r.missing is not None for r in results if not r.unavailable)
    lines += ["", f"Unavailable tool: {sum(r.missing is not None for r in absent)} of {len(absent)} answered with what "
              f"is needed; {alarms} false alarms on the other {len(results) - len(absent)} turns; "
              f"{sum(r.repeated for r in results)} answers repeat an earlier one word for word; "
              f"{sum(r.seconds for r in results) / max(len(results), 1):.2f} s a turn."]
    return "\n".join(lines)
