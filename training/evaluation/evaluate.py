"""Run a controller on held-out cases and score it with GPT4Tools' success rates, seen and unseen tools."""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from agent.controller import Controller, ControllerError
from agent.grammar import build_grammar
from agent.parsing import Final, ParseError, Step, parse_step
from agent.prompts import DEFAULT_TEMPLATE, STOP, ScratchStep, render_prompt
from agent.shortlist import Shortlist
from visual_tools import ToolInputError
from visual_tools.image_store import IMAGE_NAME, output_name

from .metrics import score
from ..data.records import GoldStep, Record, Source, image_name_for, load_jsonl, placeholder_observation, record_id
from ..data.render import conversation, from_gpt4tools, render_trace, step_text

METRICS = ("SR_t", "SR_act", "SR_args", "SR")
FORM = "form errors"  # replies with a tool name that does not exist, no `Action Input`, or an image not in the case


def case_to_record(case: Mapping[str, Any], tools: Mapping[str, Any]) -> Record:
    """A plain case `{"id", "image", "caption", "input", "gold": [{"tool", "args"}]}` as a record (optional:
    "tools" offered, "history" as [human, ai] pairs, "answer").

    Gold image arguments name the case's image file; they become the name the conversation gives it,
    and each image-making step's observation gets the provenance name the ImageStore would give.
    """
    case_id = str(case.get("id") or record_id(json.dumps(case, sort_keys=True)))
    image = case.get("image")
    name = image_name_for(case_id) if image else None
    steps, current = [], name
    for i, call in enumerate(case.get("gold") or []):
        tool = tools.get(call["tool"])
        args = [current if image and _names_image(str(arg), str(image)) else str(arg) for arg in call["args"]]
        if tool is not None and tool.output == "image_path":
            parent = next((a for spec, a in zip(tool.inputs, args) if spec.type == "image_path"), None)
            observation = output_name(tool.op, parent, record_id(case_id, str(i))[:8])
            current = observation
        else:
            observation = placeholder_observation(call["tool"])
        steps.append(GoldStep(tool=call["tool"], args=args, observation=observation))
    answer = case.get("answer") or (steps[-1].observation if steps else "")
    offered = list(case.get("tools") or tools)
    history = [(str(human), str(ai)) for human, ai in case.get("history") or []]
    return Record(id=case_id, image=str(image) if image else None, image_name=name, caption=case.get("caption", ""),
                  tools=offered, history=history, instruction=case["input"], steps=steps, answer=answer,
                  kind="positive" if steps else "negative", source=Source(teacher="case file"))


def _names_image(arg: str, image: str) -> bool:
    return arg == image or Path(arg).name == Path(image).name


def offer(records: list[Record], names: list[str] | None) -> list[Record]:
    """The cases with `names` offered (each case's gold tools kept, as a user's prompt would hold them)."""
    if names is None:
        return records
    return [r.model_copy(update={"tools": list(dict.fromkeys([*names, *r.used_tools()]))}) for r in records]


def load_cases(path: str | Path, tools: Mapping[str, Any]) -> tuple[list[Record], list[str]]:
    """Cases from GPT4Tools JSON, our records JSONL, or a plain case JSONL; and the problems found."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if path.suffix == ".json":
        records, problems = [], []
        for i, sample in enumerate(json.loads(path.read_text())):
            try:
                records.append(from_gpt4tools(sample, tools=tools).model_copy(update={"id": str(sample.get("id", i))}))
            except (ValueError, AttributeError) as exc:
                problems.append(f"sample {i}: {exc}")
        return records, problems
    records, problems = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            records.append(case_to_record(row, tools) if "gold" in row else Record.model_validate(row))
        except Exception as exc:  # a bad line is reported, the rest are evaluated
            problems.append(f"line {number}: {type(exc).__name__}: {exc}")
    if not records and not problems:
        records = load_jsonl(path).records
    return records, problems


@dataclass
class Prediction:
    id: str
    tools: str  # the gold tools, or "(no tool)"
    steps: int  # gold tool calls
    unseen: bool
    gold: str
    pred: str
    SR_t: float
    SR_act: float
    SR_args: float
    SR: float
    form: list[str] = field(default_factory=list)

    @property
    def skipped_tool(self) -> bool:
        """A claim without action: the case needed a tool and the model answered at once, calling none."""
        return self.steps > 0 and isinstance(parse_step(self.pred.split(STOP[0], 1)[0]), Final)


def form_errors(pred: str, tools: Mapping[str, Any], images: list[str]) -> list[str]:
    """What is wrong in form with each step of a predicted trace: an unknown tool name, a step that does not parse
    (e.g. `Action:` without `Action Input:`), an image argument naming a file the case does not have."""
    known = {" ".join(name.split()).casefold(): tool for name, tool in tools.items()}
    problems = []
    for chunk in re.split(r"\nObservation:[^\n]*\n?", pred):
        if not chunk.strip() or chunk.startswith("[controller error"):
            continue
        parsed = parse_step(chunk)
        if isinstance(parsed, ParseError):
            problems.append("not in the format")
        elif isinstance(parsed, Step):
            tool = known.get(" ".join(parsed.tool.split()).casefold())
            if tool is None:
                problems.append(f"unknown tool '{parsed.tool}'")
                continue
            try:
                args = tool.parse_input(parsed.tool_input)
            except ToolInputError:
                problems.append(f"arguments that do not fit {tool.name}")
                continue
            problems += [f"no image named '{args[i.name]}'" for i in tool.inputs
                         if i.type == "image_path" and args[i.name] not in images]
    return problems


def gold_text(record: Record) -> str:
    target = record.model_copy(update={"steps": record.steps[record.given_steps:]})
    return render_trace(target)


def shortlisted(records: list[Record], shortlist: Shortlist) -> list[Record]:
    """Each case offering the shortlist's list of its tools for its words, ranked and sized as the chat's (gold not
    forced)."""
    return [r.model_copy(update={"tools": shortlist.offer(r.instruction, r.tools, conversation(r))}) for r in records]


def predict(controller: Controller, record: Record, tools: Mapping[str, Any], *, max_steps: int = 5,
            max_new_tokens: int = 128, grammar: bool = False, template: str = DEFAULT_TEMPLATE) -> str:
    """The model's own trace for the case, its prompts in `template`; each of its tool calls is answered with the gold
    observation. With `grammar`, each step is decoded under the grammar of the offered tools and the images the
    case has so far."""
    offered = [tools[name] for name in record.tools if name in tools]
    scratch = [ScratchStep(step_text(s), s.observation) for s in record.steps[:record.given_steps]]
    images = [record.image_name] if record.image_name else []
    trace = ""
    for i in range(max_steps):
        prompt = render_prompt(offered, conversation(record), record.instruction, scratch, template)
        images += [s.observation for s in scratch if IMAGE_NAME.fullmatch(s.observation)]
        constraint = build_grammar(offered, images) if grammar else None
        try:
            text = controller.generate(prompt, stop=STOP, max_new_tokens=max_new_tokens, grammar=constraint)[0].strip()
        except ControllerError as exc:
            return trace + f"[controller error: {exc}]"
        parsed = parse_step(text)
        if isinstance(parsed, (Final, ParseError)):
            return trace + text
        gold_index = record.given_steps + i
        observation = record.steps[gold_index].observation if gold_index < len(record.steps) else ""
        trace += f"{text}\nObservation: {observation}\n"
        scratch.append(ScratchStep(text, observation))
    return trace


def evaluate(controller: Controller, records: Iterable[Record], tools: Mapping[str, Any], *,
             unseen: Iterable[str] = (), strict_images: bool = False, max_steps: int = 5, grammar: bool = False,
             template: str = DEFAULT_TEMPLATE, on_case: Callable[[int, int], None] | None = None) -> list[Prediction]:
    unseen = set(unseen)
    records = list(records)
    out = []
    for number, record in enumerate(tqdm(records, desc="evaluating", unit="case"), 1):
        gold = gold_text(record)
        pred = predict(controller, record, tools, max_steps=max_steps, grammar=grammar, template=template)
        result = score(gold, pred, strict_images)
        used = record.used_tools()[record.given_steps:] if record.steps else []
        images = [record.image_name, *(s.observation for s in record.steps)] if record.image_name else []
        out.append(Prediction(record.id, ", ".join(dict.fromkeys(s.tool for s in record.steps[record.given_steps:]))
                              or "(no tool)", len(used), bool(unseen & set(used)), gold, pred, result.thought,
                              result.action, result.args, result.success, form_errors(pred, tools, images)))
        if on_case:
            on_case(number, len(records))
    return out


def summary(predictions: list[Prediction]) -> list[dict[str, Any]]:
    """Rows: overall, seen, unseen, multi-step, then one per gold tool chain; each with its case count and the
    four rates."""
    groups: dict[str, list[Prediction]] = {"overall": predictions,
                                           "seen tools": [p for p in predictions if not p.unseen],
                                           "unseen tools": [p for p in predictions if p.unseen],
                                           "multi-step": [p for p in predictions if p.steps > 1]}
    for p in sorted(predictions, key=lambda p: p.tools):
        groups.setdefault(p.tools, []).append(p)
    rows = []
    for name, group in groups.items():
        if group:
            rows.append({"set": name, "cases": len(group),
                         **{m: round(100 * sum(getattr(p, m) for p in group) / len(group), 1) for m in METRICS},
                         FORM: sum(bool(p.form) for p in group)})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    head = "| set | cases | " + " | ".join(METRICS) + f" | {FORM} |\n|---|---|" + "---|" * (len(METRICS) + 1)
    return head + "\n" + "\n".join(f"| {r['set']} | {r['cases']} | " + " | ".join(f"{r[m]:.1f}" for m in METRICS)
                                   + f" | {r.get(FORM, 0)} |" for r in rows)


def to_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["set", "cases", *METRICS, FORM])
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_report(predictions: list[Prediction], out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    rows = summary(predictions)
    paths = {"markdown": out / "summary.md", "csv": out / "summary.csv", "predictions": out / "predictions.jsonl"}
    paths["markdown"].write_text(markdown(rows) + "\n")
    paths["csv"].write_text(to_csv(rows))
    paths["predictions"].write_text("".join(json.dumps(asdict(p)) + "\n" for p in predictions))
    return paths
