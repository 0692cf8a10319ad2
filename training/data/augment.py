"""GPT4Tools' augmentations (negative, context, multi-turn samples) and the held-out split by tool."""
from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from visual_tools import Tool
from visual_tools.image_store import IMAGE_NAME, output_name

from . import templates
from .records import GoldStep, Record, Source, record_id

NO_TOOL_CHAT = Path(__file__).resolve().parents[2] / "assets" / "no_tool_chat.jsonl"
IMAGE_NAME_QUESTION = ("What is the file name of the image I gave you?", "The image is named {name}.")


def load_chat(path: Path = NO_TOOL_CHAT) -> list[tuple[str, str]]:
    """Questions that need no tool, with answers ({"input", "answer"} per line)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(row["input"], row["answer"]) for row in rows]


def negatives(records: Sequence[Record], chat: Sequence[tuple[str, str]], ratio: float,
              rng: random.Random) -> list[Record]:
    """A conversation about an image, then a question that needs no tool: `Do I need to use a tool? No`."""
    out = []
    for base in rng.sample(list(records), min(len(records), round(len(records) * ratio))):
        question, answer = rng.choice(chat)
        image = {}
        if base.image_name and rng.random() < 0.2:
            question, answer = IMAGE_NAME_QUESTION[0], IMAGE_NAME_QUESTION[1].format(name=base.image_name)
        elif rng.random() < 0.3:  # a chat without any image
            image = {"image": None, "image_name": None, "caption": ""}
        out.append(base.model_copy(update={
            "id": record_id(base.id, "negative", question), "instruction": question, "steps": [],
            "answer": answer, "given_steps": 0, "kind": "negative", "original": None, **image,
            "source": _derived(base, "negative")}))
    return out


def _derived(base: Record, how: str) -> Source:
    return Source(teacher=f"{base.source.teacher}+{how}", prompt_version=base.source.prompt_version,
                  job=base.source.job)


def followups(records: Sequence[Record], ratio: float, rng: random.Random) -> list[Record]:
    """A finished tool turn in the history, then a remark about it that needs no tool (thanks, what was done)."""
    done = [r for r in records if r.kind == "positive" and r.steps and r.answer]
    out = []
    for base in rng.sample(done, min(len(done), round(len(records) * ratio))):
        files = list(dict.fromkeys(IMAGE_NAME.findall(base.answer)))
        question, answer = rng.choice([f for f in templates.FOLLOWUPS if files or "{files}" not in f[1]])
        answer = answer.format(request=base.instruction.rstrip(".?! "), files=" and ".join(files),
                               tools=" then ".join(dict.fromkeys(s.tool for s in base.steps)))
        out.append(base.model_copy(update={
            "id": record_id(base.id, "followup", question), "instruction": question, "steps": [], "answer": answer,
            "history": [*base.history, (base.instruction, base.answer)], "given_steps": 0, "kind": "negative",
            "original": None, "source": _derived(base, "followup")}))
    return out


def chains(records: Sequence[Record], ratio: float, rng: random.Random, tools: Mapping[str, Tool]) -> list[Record]:
    """Two single-step requests on one image joined ("…, then …"): the second tool reads the first's output."""
    def image_in(record: Record) -> bool:
        return any(spec.type == "image_path" for spec in tools[record.steps[0].tool].inputs)
    single = [r for r in records if r.kind == "positive" and len(r.steps) == 1 and r.image_name and not r.history
              and r.steps[0].tool in tools and image_in(r)]
    firsts = [r for r in single if tools[r.steps[0].tool].output == "image_path"]
    out = []
    for _ in range(round(len(records) * ratio) if firsts else 0):
        first = rng.choice(firsts)
        seconds = [r for r in single if r.image_name == first.image_name and r.steps[0].tool != first.steps[0].tool]
        if not seconds:
            continue
        second = rng.choice(seconds)
        tool, made = tools[second.steps[0].tool], first.steps[0].observation
        args = [made if spec.type == "image_path" else arg for spec, arg in zip(tool.inputs, second.steps[0].args)]
        new_id = record_id(first.id, second.id, "chain")
        if tool.output == "image_path":
            observation = output_name(tool.op, made, new_id[:8])
            answer = rng.choice(templates.IMAGE_ANSWERS).format(name=observation)
        else:
            observation = answer = second.steps[0].observation
        later = second.instruction[0].lower() + second.instruction[1:]
        instruction = rng.choice(templates.CHAIN_JOINS).format(first=first.instruction.rstrip(".?! "), then=later)
        out.append(first.model_copy(update={
            "id": new_id, "instruction": instruction, "answer": answer, "original": None,
            "tools": list(dict.fromkeys([*first.tools, tool.name])),
            "steps": [first.steps[0], GoldStep(tool=tool.name, args=args, observation=observation)],
            "source": _derived(first, "chain")}))
    return out


def contexts(records: Sequence[Record], ratio: float, rng: random.Random) -> list[Record]:
    """The action chain cut after a random step: the prompt shows what was done, the model continues."""
    chained = [r for r in records if r.steps and r.answer is not None]
    out = []
    for base in rng.sample(chained, min(len(chained), round(len(records) * ratio))):
        cut = rng.randint(1, len(base.steps))
        out.append(base.model_copy(update={"id": record_id(base.id, "context", str(cut)), "given_steps": cut,
                                           "kind": "context", "original": None}))
    return out


def multi_turn(records: Sequence[Record], ratio: float, rng: random.Random, max_turns: int = 3) -> list[Record]:
    """Several instructions about one image joined into one conversation; the last one is the sample."""
    by_image: dict[str | None, list[Record]] = defaultdict(list)
    for record in records:
        if record.kind == "positive" and record.answer is not None and record.image_name:
            by_image[record.image_name].append(record)
    groups = [group for group in by_image.values() if len(group) >= 2]
    out = []
    for _ in range(round(len(records) * ratio) if groups else 0):
        group = rng.choice(groups)
        turns = rng.sample(group, rng.randint(2, min(max_turns, len(group))))
        *earlier, last = turns
        out.append(last.model_copy(update={
            "id": record_id(*(t.id for t in turns), "multi"),
            "history": [*last.history, *((t.instruction, t.answer) for t in earlier)], "original": None}))
    return out


def augment(records: Sequence[Record], *, negative: float = 0.15, context: float = 0.15, multi: float = 0.1,
            followup: float = 0.0, chain: float = 0.0, tools: Mapping[str, Tool] | None = None,
            seed: int = 0) -> list[Record]:
    """The records plus GPT4Tools-style augmentations (ratios relative to the number of records), and ours:
    follow-up remarks that need no tool, and two-step chains (`tools`: the registry's, by prompt name)."""
    rng = random.Random(seed)
    made = chains(records, chain, rng, tools) if chain and tools else []
    return [*records, *made, *negatives(records, load_chat(), negative, rng), *contexts(records, context, rng),
            *multi_turn(records, multi, rng), *followups(records, followup, rng)]


def split_by_tool(records: Iterable[Record], unseen: Iterable[str], test_fraction: float = 0.1,
                  seed: int = 0) -> dict[str, list[Record]]:
    """train / test_seen / test_unseen: a record using an unseen tool goes to test_unseen, and the unseen
    tools are removed from the tools offered in training prompts, so training never sees them."""
    unseen = set(unseen)
    rng = random.Random(seed)
    split: dict[str, list[Record]] = {"train": [], "test_seen": [], "test_unseen": []}
    for record in records:
        if unseen & set(record.used_tools()):
            split["test_unseen"].append(record)
        elif rng.random() < test_fraction:
            split["test_seen"].append(record)
        else:
            offered = [t for t in record.tools if t not in unseen]
            split["train"].append(record.model_copy(update={"tools": offered}))
    return split
