"""The canonical training record and its JSONL form (read and written through `datasets`)."""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import datasets
from pydantic import BaseModel, Field, ValidationError

datasets.disable_progress_bars()  # JSONL writes are quick; their bars would bury the generation progress

Kind = Literal["positive", "negative", "context"]
Status = Literal["pending", "accepted", "rejected"]
YES = "Do I need to use a tool? Yes"


class GoldStep(BaseModel):
    """One tool call of the gold chain; `args` are positional, in the tool's input order."""
    thought: str = YES
    tool: str
    args: list[str]
    observation: str = ""


class Source(BaseModel):
    teacher: str
    prompt_version: str = ""
    job: str = ""  # the generation job (image + round) that made it, so a rerun can skip it


class Record(BaseModel):
    """One sample: the conversation so far, the instruction, the gold steps and the final answer.

    The model is trained on `steps[given_steps:]` and then `answer` (None: the sample ends after the
    last step, as a GPT4Tools step-sample does). Context samples show `steps[:given_steps]` in the prompt.
    """
    id: str
    image: str | None = None  # the source file
    image_name: str | None = None  # how the conversation names it, e.g. image/1a2b3c4d.png
    caption: str = ""
    tools: list[str]  # tool names offered in the prompt, in order
    history: list[tuple[str, str]] = Field(default_factory=list)  # earlier (human, ai) turns
    instruction: str
    steps: list[GoldStep] = Field(default_factory=list)
    answer: str | None = ""
    given_steps: int = 0
    kind: Kind = "positive"
    source: Source
    status: Status = "pending"
    reviewer: str | None = None
    reason: str | None = None
    original: str | None = None  # the record as generated (its JSON), kept when a reviewer edits it
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)

    def used_tools(self) -> list[str]:
        return list(dict.fromkeys(step.tool for step in self.steps))

    def label(self) -> str:
        """The kind as reports and filters show it: a sample with earlier turns is "multi-turn"."""
        return "multi-turn" if self.history else self.kind


def placeholder_observation(tool_name: str) -> str:
    """What a text tool said, when it could not run (GPT4Tools' data uses such placeholders too)."""
    return f"[output from {tool_name}]"


def record_id(*parts: str) -> str:
    """A stable id from what defines a record, so regenerating the same thing gives the same id."""
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:12]


def image_name_for(record_key: str) -> str:
    """The upload name the conversation uses for a record's image (same shape as ImageStore's)."""
    return f"image/{hashlib.sha1(record_key.encode()).hexdigest()[:8]}.png"


@dataclass
class LoadReport:
    records: list[Record]
    errors: list[str] = field(default_factory=list)  # "line N: why", one per broken line


def load_jsonl(path: str | Path) -> LoadReport:
    """Read records; a broken line is reported with its number and the other lines still load."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    report = LoadReport([])
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                report.records.append(Record.model_validate(json.loads(line)))
            except json.JSONDecodeError as exc:
                report.errors.append(f"line {number}: not JSON ({exc.msg})")
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "record"
                report.errors.append(f"line {number}: {where}: {first['msg']}")
    return report


def save_jsonl(records: Iterable[Record], path: str | Path) -> Path:
    """Write records as JSONL through `datasets` (what `datasets.load_dataset("json", ...)` reads back)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    as_dataset(records).to_json(path, lines=True, force_ascii=False)
    return path


def as_dataset(records: Iterable[Record]) -> datasets.Dataset:
    """Records as a `datasets.Dataset` (one column per field) for training and analysis."""
    return datasets.Dataset.from_list([json.loads(r.model_dump_json()) for r in records])
