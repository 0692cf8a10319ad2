"""Training samples for function calling: our records in BFCL's prompt format or GPT4Tools', and ToolACE's data.

A sample is a fully rendered prompt, the target reply and its gold calls. Function-calling prompts use BFCL's
own system prompt (its wording, function list as JSON) followed by the conversation, so a model trained here
is asked the same way on BFCL. Never train on BFCL's data.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..data.records import Record, load_jsonl, record_id
from ..data.render import conversation, examples
from .bfcl import ROLES, render_fc
from .calls import Call, CallParseError, Style, format_calls, parse_calls, parse_step_call, positional_call

@dataclass
class Sample:
    id: str
    prompt: str
    target: str  # the reply to learn: a call list, or text when no call is right
    gold: list[Call] = field(default_factory=list)
    style: Style = "python"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "gold": [{"name": c.name, "args": c.args} for c in self.gold]}

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> "Sample":
        return cls(str(row["id"]), row["prompt"], row["target"], [Call(c["name"], dict(c["args"]))
                                                                   for c in row.get("gold") or []],
                   row.get("style", "python"))


def from_record(record: Record, tools: Mapping[str, Any], style: Style = "python") -> list[Sample]:
    """One sample per trained step (earlier steps as assistant/tool turns), and one for the final answer."""
    if style == "gpt4tools":
        out = []
        for i, (prompt, completion) in enumerate(examples(record, tools)):
            out.append(Sample(f"{record.id}-{i}", prompt, completion, parse_step_call(completion, tools), style))
        return out
    functions = [tools[name].function_doc() for name in record.tools if name in tools]
    messages: list[dict[str, str]] = []
    for turn in conversation(record):
        messages += [{"role": "user", "content": turn.human}, {"role": "assistant", "content": turn.ai}]
    messages.append({"role": "user", "content": record.instruction})
    out = []
    for i, step in enumerate(record.steps):
        call = [positional_call(step.tool, step.args, tools)]
        if i >= record.given_steps:
            out.append(Sample(f"{record.id}-{i}", render_fc(functions, messages), format_calls(call), call))
        messages += [{"role": "assistant", "content": format_calls(call)},
                     {"role": "tool", "content": step.observation}]
    if record.answer is not None:
        out.append(Sample(f"{record.id}-answer", render_fc(functions, messages), record.answer, []))
    return out


def _functions_in(system: str) -> list[dict]:
    """The first JSON list of function objects in ToolACE's system prompt."""
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(system) if ch == "["):
        try:
            value, _ = decoder.raw_decode(system, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, list) and value and all(isinstance(f, dict) and "name" in f for f in value):
            return value
    raise ValueError("no JSON list of functions in the system prompt")


def from_toolace(item: Mapping[str, Any], number: int) -> list[Sample]:
    """ToolACE's `data.json` item: `system` with a JSON function list, `conversations` of user/assistant/tool
    turns. Each assistant turn becomes a sample: its calls (names may contain spaces), or text (no call)."""
    functions = _functions_in(item.get("system", ""))
    messages: list[dict[str, str]] = []
    out = []
    for turn in item.get("conversations") or []:
        role, text = turn.get("from", ""), str(turn.get("value", ""))
        if role == "assistant":
            try:
                gold = parse_calls(text)
            except CallParseError as exc:
                raise ValueError(f"assistant turn {len(messages)}: {exc}") from None
            out.append(Sample(f"toolace-{number}-{len(messages)}", render_fc(functions, messages), text.strip(), gold))
        messages.append({"role": role if role in ROLES else "user", "content": text})
    return out


@dataclass
class Loaded:
    samples: list[Sample]
    problems: list[str]
    kind: str


def load_samples(path: str | Path, tools: Mapping[str, Any], style: Style = "python") -> Loaded:
    """Samples from ToolACE's data.json, our records JSONL, or a samples JSONL; with what could not be read."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    samples, problems = [], []
    if path.suffix == ".json":
        items = json.loads(path.read_text())
        if not isinstance(items, list):
            raise ValueError(f"{path}: expected a JSON list of ToolACE items")
        for number, item in enumerate(items):
            try:
                samples += from_toolace(item, number)
            except (ValueError, AttributeError, TypeError) as exc:
                problems.append(f"item {number}: {exc}")
        return Loaded(samples, problems, "ToolACE")
    first = next((line for line in path.read_text(errors="replace").splitlines() if line.strip()), "{}")
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        head = {}  # read as records below: the broken line is reported with its number
    if isinstance(head, dict) and "prompt" in head and "target" in head:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                samples.append(Sample.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                problems.append(f"line {number}: {exc}")
        return Loaded(samples, problems, "samples")
    report = load_jsonl(path)
    for record in report.records:
        unknown = sorted(set(record.tools) - set(tools))
        if unknown:
            problems.append(f"record {record.id}: unknown tools {unknown}")
            continue
        try:
            samples += from_record(record, tools, style)
        except CallParseError as exc:
            problems.append(f"record {record.id}: {exc}")
    return Loaded(samples, report.errors + problems, "records")


def save_samples(samples: Iterable[Sample], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(s.to_json(), ensure_ascii=False) + "\n" for s in samples))
    return path


def split(samples: list[Sample], fraction: float, seed: int = 0) -> tuple[list[Sample], list[Sample]]:
    """(pool, held-out dev set): whole source items (all samples of a record) by a stable hash of their id."""
    if not 0 < fraction < 1:
        raise ValueError("the held-out fraction must be between 0 and 1")
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.id.rsplit("-", 1)[0], []).append(sample)
    ranked = sorted(groups, key=lambda key: record_id(str(seed), key))
    cut = max(1, round(len(ranked) * fraction))
    return [s for key in ranked[cut:] for s in groups[key]], [s for key in ranked[:cut] for s in groups[key]]
