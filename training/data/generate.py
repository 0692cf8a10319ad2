"""GPT4Tools' self-instruct generation: image content + tool descriptions -> teacher -> records."""
from __future__ import annotations

import json
import math
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, UnidentifiedImageError
from tqdm.auto import tqdm

from agent.shortlist import Shortlist
from visual_tools import VISUAL_TOOL_CLASSES, Tool, ToolRegistry
from visual_tools.image_store import output_name

from . import templates
from .prompts import GENERATION_PROMPT, PROMPT_VERSION
from .records import GoldStep, Record, Source, image_name_for, placeholder_observation, record_id
from .render import conversation
from .teachers import EXAMPLE_IMAGE, Annotation, Teacher, TeacherFailed, TeacherRequest

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp"}
_NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*])\s*")


def generation_prompt(annotation: Annotation, tools: Sequence[Tool], n: int) -> str:
    listed = "\n".join(f"{i}. {tool.name}: {tool.description}" for i, tool in enumerate(tools, 1))
    return GENERATION_PROMPT.format(caption=annotation.describe(), count=len(tools), n=n, tools=listed)


def load_annotations(folder: Path) -> dict[str, dict]:
    """`annotations.json` beside the images: {file name: {"caption": ..., "objects": {name: box}}}."""
    path = folder / "annotations.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def annotate(path: Path, known: dict, registry: ToolRegistry) -> Annotation:
    """Caption and boxes from the annotation file; the captioning and OCR tools fill in where they run here."""
    entry = known.get(path.name, {})
    annotation = Annotation(entry.get("caption", ""), dict(entry.get("objects", {})))
    for class_name, attr in (("ImageCaptioning", "caption"), ("TextDetection", "text")):
        tool = registry.by_class(class_name)
        # the offline classifier's object names are no caption (the chat's uploads get none from it either)
        usable = tool is not None and (tool.captions() if class_name == "ImageCaptioning" else tool.availability()[0])
        if not getattr(annotation, attr) and usable:
            result = str(tool(image_path=path))
            if not result.startswith("No text"):
                setattr(annotation, attr, result)
    return annotation


@dataclass
class Candidate:
    instruction: str
    tool: Tool
    args: list[str]


def parse_reply(reply: str, registry: ToolRegistry) -> tuple[list[Candidate], int]:
    """The teacher's list as candidates, and how many non-empty lines did not fit the format."""
    names = sorted(registry.tools, key=len, reverse=True)  # longest first: no name is cut short
    candidates, bad = [], 0
    for line in filter(None, (line.strip() for line in reply.splitlines())):
        line = _NUMBERED.sub("", line)
        found = next(((m.start(), name) for name in names
                      for m in [re.search(r"\[\s*" + re.escape(name) + r"\s*[,\]]", line, re.I)] if m), None)
        if found is None or not line.rstrip().endswith("]"):
            bad += 1
            continue
        start, name = found
        tool = registry.tools[name]
        instruction = line[:start].strip().rstrip(",").strip().strip('"').strip()
        inside = line[start:].strip()[1:-1].strip()[len(name):].lstrip(" ,")
        parts = inside.split(",", len(tool.inputs) - 1) if tool.inputs and inside else []
        args = [a.strip().strip('"').strip() for a in parts]
        if not instruction or not len(tool.required()) <= len(args) <= len(tool.inputs) or not all(args):
            bad += 1
            continue
        candidates.append(Candidate(instruction, tool, args))
    return candidates, bad


def build_record(candidate: Candidate, *, job: str, index: int, image: Path, annotation: Annotation,
                 offered: list[str], registry: ToolRegistry, teacher: str, rng: random.Random) -> Record:
    """One positive record; a ControlNet tool first runs its condition tool, as GPT4Tools' data does."""
    name = image_name_for(job)
    steps: list[GoldStep] = []
    current = name
    condition = registry.by_class(candidate.tool.condition) if candidate.tool.condition else None
    if condition is not None:
        current = output_name(condition.op, name, record_id(job, str(index), "condition")[:8])
        steps.append(GoldStep(tool=condition.name, args=[name], observation=current))
    args = [current if spec.type == "image_path" and arg == EXAMPLE_IMAGE else arg
            for spec, arg in zip(candidate.tool.inputs, candidate.args)]
    parent = next((a for spec, a in zip(candidate.tool.inputs, args) if spec.type == "image_path"), None)
    if candidate.tool.output == "image_path":
        observation = output_name(candidate.tool.op, parent, record_id(job, str(index), "output")[:8])
        answer = rng.choice(templates.IMAGE_ANSWERS).format(name=observation)
    else:
        observation = _text_observation(candidate.tool, args, annotation)
        answer = observation
    steps.append(GoldStep(tool=candidate.tool.name, args=args, observation=observation))
    tools = list(dict.fromkeys([*offered, *(s.tool for s in steps)]))
    return Record(id=record_id(job, str(index), candidate.instruction), image=str(image), image_name=name,
                  caption=annotation.caption, tools=tools, instruction=candidate.instruction, steps=steps,
                  answer=answer, source=Source(teacher=teacher, prompt_version=PROMPT_VERSION, job=job))


def _text_observation(tool: Tool, args: list[str], annotation: Annotation) -> str:
    """What a text tool said: about this image where the annotation knows, what a tool that reads no image
    (Calculator, Calendar, WikiSearch) answers where it runs here; else GPT4Tools' placeholder."""
    known = {"ImageCaptioning": annotation.caption, "TextDetection": annotation.text}.get(type(tool).__name__)
    if not known and all(spec.type != "image_path" for spec in tool.inputs) and tool.availability()[0]:
        known = str(tool(**{spec.name: arg for spec, arg in zip(tool.inputs, args)}))
    return known or placeholder_observation(tool.name)


@dataclass
class GenerationReport:
    images: int = 0
    skipped_files: list[str] = field(default_factory=list)  # "name: why"
    jobs: int = 0
    jobs_done_before: int = 0
    jobs_failed: list[str] = field(default_factory=list)  # "job: why"
    lines_unparsed: int = 0
    records: int = 0  # new raw records this run


def list_images(folder: Path, report: GenerationReport) -> list[Path]:
    """Every readable image in `folder`; anything else is skipped with a reason."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no such folder: {folder}")
    images = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name != "annotations.json"):
        try:
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                raise UnidentifiedImageError("not an image file type")
            with Image.open(path) as image:
                image.verify()
            images.append(path)
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            report.skipped_files.append(f"{path.name}: {exc}")
    report.images = len(images)
    return images


def generate(images: Path, teacher: Teacher, registry: ToolRegistry, raw_out: Path, *, n: int,
             per_call: int = 20, offer: int | tuple[int, int] = 0, seed: int = 0, shortlist: Shortlist | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> GenerationReport:
    """Ask `teacher` for about `n` instructions, spread evenly over the images; append raw records to `raw_out`.

    Resumable: jobs (image x round) already in `raw_out` are skipped; failed jobs run again next time.
    `offer` > 0 offers that many tools per prompt (the gold ones plus random others, shuffled), `(low, high)` a
    number drawn between them for each record, 0 all of them in the registry's order. With a `shortlist`, the
    others are the retriever's first picks for the instruction, ranked most likely first as the chat offers them
    (exactly k of them where `offer` sets k, else as many as the chat would: those above its threshold).
    """
    report = GenerationReport()
    paths = list_images(Path(images), report)
    if not paths:
        raise ValueError(f"no images in {images} ({len(report.skipped_files)} other files skipped)")
    # instructions for the visual tools and the text tools the template teacher can phrase; any tool may be offered
    pool = registry.all()
    tools = [t for t in pool if type(t).__name__ in VISUAL_TOOL_CLASSES or t.phrasings]
    low, high = offer if isinstance(offer, tuple) else (offer, offer)
    done = {json.loads(line)["source"]["job"] for line in raw_out.read_text().splitlines() if line.strip()} \
        if raw_out.is_file() else set()
    known = load_annotations(Path(images))
    per_image = math.ceil(n / len(paths))
    rounds = math.ceil(per_image / per_call)
    jobs = [(r, path) for r in range(rounds) for path in paths]
    report.jobs = len(jobs)
    raw_out.parent.mkdir(parents=True, exist_ok=True)
    annotations: dict[Path, Annotation] = {}
    with raw_out.open("a", encoding="utf-8") as out:
        for number, (round_, path) in enumerate(tqdm(jobs, desc=f"generating ({teacher.name})", unit="job"), 1):
            job = f"{path.name}#{round_}"
            if job in done:
                report.jobs_done_before += 1
            else:
                annotation = annotations.setdefault(path, annotate(path, known, registry))
                want = min(per_call, per_image - round_ * per_call)
                request = TeacherRequest(generation_prompt(annotation, tools, want), annotation, tools, want,
                                         seed=int(record_id(str(seed), job), 16))
                try:
                    reply = teacher.instruct(request)
                except TeacherFailed as exc:
                    report.jobs_failed.append(f"{job}: {exc}")
                    reply = None
                if reply is not None:
                    candidates, bad = parse_reply(reply, registry)
                    report.lines_unparsed += bad
                    rng = random.Random(request.seed)
                    for index, candidate in enumerate(candidates):
                        offered = _offered(candidate.tool.name, candidate.instruction, [t.name for t in pool],
                                           rng.randint(low, high) if high else 0, shortlist, rng)
                        record = build_record(candidate, job=job, index=index, image=path, annotation=annotation,
                                              offered=offered, registry=registry, teacher=teacher.name, rng=rng)
                        out.write(record.model_dump_json() + "\n")
                        report.records += 1
                    out.flush()
            if on_progress:
                on_progress(number, len(jobs))
    return report


def _offered(gold: str, instruction: str, names: list[str], k: int, shortlist: Shortlist | None,
             rng: random.Random) -> list[str]:
    """The tools a record's prompt lists (see `generate`)."""
    if shortlist is not None:
        return shortlist.offer(instruction, names, must=[gold], k=k or None)
    if not k:
        return names
    others = [name for name in names if name != gold]
    offered = rng.sample(others, min(len(others), k - 1)) + [gold]
    rng.shuffle(offered)
    return offered


def reoffer(records: list[Record], registry: ToolRegistry, shortlist: Shortlist, offer: int | tuple[int, int],
            seed: int = 0) -> list[Record]:
    """Every record's offered list drawn again as the chat draws it, after augmentation (a chain must offer both
    of its tools, a "thanks" gets the list its own words retrieve): the shortlist's ranked list for the instruction
    and the conversation (sized by its threshold as the chat's, or exactly k drawn from `offer` where it is set),
    over the `registry`'s tools available here or over all of them (one of the two per record, as the app on this
    machine and one with every checkpoint offer them), the record's gold tools among them."""
    rng = random.Random(seed)
    low, high = offer if isinstance(offer, tuple) else (offer, offer)
    every, available = [t.name for t in registry.all()], [t.name for t in registry.available()]
    out = []
    for record in records:
        gold = record.used_tools()
        pool = rng.choice([every, available])
        pool = pool + [name for name in gold if name not in pool]
        k = max(rng.randint(low, high), len(gold)) if high else None
        offered = shortlist.offer(record.instruction, pool, conversation(record), must=gold, k=k)
        out.append(record.model_copy(update={"tools": offered}))
    return out


@dataclass
class DatasetReport:
    generation: GenerationReport
    raw: int
    dropped: dict[str, int]
    kept: int
    augmented: dict[str, int]  # records per kind in the written dataset
    seconds: float = 0.0

    def markdown(self) -> str:
        g = self.generation
        rows = [("images", g.images), ("files skipped (not images)", len(g.skipped_files)),
                ("teacher calls: run / skipped as done / failed", f"{g.jobs - g.jobs_done_before - len(g.jobs_failed)}"
                 f" / {g.jobs_done_before} / {len(g.jobs_failed)}"),
                ("reply lines not in the format", g.lines_unparsed), ("raw records", self.raw),
                *((f"dropped: {reason}", count) for reason, count in sorted(self.dropped.items())),
                ("kept", self.kept), *((f"written: {kind}", count) for kind, count in sorted(self.augmented.items())),
                ("seconds", f"{self.seconds:.1f}")]
        return "| step | count |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def build_dataset(images: Path, teacher: Teacher, registry: ToolRegistry, out: Path, *, n: int, per_call: int = 20,
                  offer: int | tuple[int, int] = 0, seed: int = 0, augment_data: bool = True,
                  shortlist: Shortlist | None = None,
                  on_progress: Callable[[int, int], None] | None = None) -> DatasetReport:
    """Generate (resumably, into `<out>.raw.jsonl`), filter, augment, and write the dataset to `out`."""
    from .augment import augment
    from .filters import filter_records
    from .records import load_jsonl, save_jsonl

    started = time.monotonic()
    out = Path(out)
    raw_path = out.with_name(out.stem + ".raw.jsonl")
    generation = generate(images, teacher, registry, raw_path, n=n, per_call=per_call, offer=offer, seed=seed,
                          shortlist=shortlist, on_progress=on_progress)
    raw = load_jsonl(raw_path).records
    kept, dropped = filter_records(raw, registry)
    records = augment(kept, negative=0.3, followup=0.1, chain=0.35, tools=registry.tools, seed=seed) if augment_data \
        else kept
    if shortlist is not None:
        records = reoffer(records, ToolRegistry.from_load(), shortlist, offer, seed)
    save_jsonl(records, out)
    kinds = Counter(r.label() for r in records)
    return DatasetReport(generation, len(raw), dict(dropped), len(kept), dict(kinds), time.monotonic() - started)
