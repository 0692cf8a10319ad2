"""GPT4Tools' SR per kind of hand-written case, for several adapters, both case sets and both tool settings, in one
table (shortlist and grammar on, as the chat runs; llama.cpp where it is installed).

    python bench/handwritten.py --adapter untuned=none --adapter shipped=assets/controller-lora \
        [--sets dev,blind] [--offer available,all] [--out bench/handwritten]

Each adapter's shortlist uses the classifier saved beside it (the shipped one for `none`). Rows: the cases'
`kind` and overall; one column per adapter x set x tools. `--out` keeps each run's predictions and the table.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.factory import ControllerSpec, add_engine_flag, load_controller  # noqa: E402
from agent.shortlist import DEFAULT_K, load_shortlist, retriever_folder  # noqa: E402
from training.evaluation.evaluate import FORM, evaluate, load_cases, offer, shortlisted  # noqa: E402
from visual_tools import ToolRegistry  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = "answered without a needed tool"  # counts, like FORM: claims without action
SETS = {"dev": ROOT / "assets" / "eval" / "handwritten.jsonl", "blind": ROOT / "assets" / "eval" / "blind.jsonl"}


def run(adapter: str, data: Path, setting: str, registry: ToolRegistry, k: int, limit: int = 0,
        engine: str | None = None) -> tuple[dict[str, float], list]:
    """SR (%) per kind and overall, the form-error count, and the predictions, for one adapter/set/setting."""
    tools = registry.tools
    kinds = {str(row["id"]): row["kind"] for row in map(json.loads, filter(None, data.read_text().splitlines()))}
    cases = load_cases(data, tools)[0][:limit or None]
    names = [t.name for t in (registry.available() if setting == "available" else registry.all())]
    shortlist, note = load_shortlist(k, retriever_folder(adapter), registry.all())
    if note:
        print(f"warning: {note}", file=sys.stderr)
    cases = shortlisted(offer(cases, names), shortlist)
    spec = ControllerSpec("embedded", adapter=adapter, engine=engine)
    predictions = evaluate(load_controller(spec), cases, tools, grammar=True, template=spec.template)
    by_kind: dict[str, list[float]] = defaultdict(list)
    for p in predictions:
        by_kind[kinds[p.id]].append(p.SR)
        by_kind["overall"].append(p.SR)
    rates = {kind: 100 * sum(v) / len(v) for kind, v in by_kind.items()}
    rates[FORM] = sum(bool(p.form) for p in predictions)
    rates[SKIPPED] = sum(p.skipped_tool for p in predictions)
    return rates, predictions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", action="append", required=True, metavar="LABEL=PATH",
                        help="an adapter folder, or 'none' for the untuned base; repeat for more columns")
    parser.add_argument("--sets", default="dev,blind")
    parser.add_argument("--offer", default="available,all")
    parser.add_argument("--shortlist", type=int, default=DEFAULT_K)
    parser.add_argument("--limit", type=int, default=0, help="only the first N cases of each set")
    parser.add_argument("--out", type=Path)
    add_engine_flag(parser)
    args = parser.parse_args()
    registry = ToolRegistry.from_load(None)
    columns: dict[str, dict[str, float]] = {}
    for spec in args.adapter:
        label, _, adapter = spec.partition("=")
        for name in args.sets.split(","):
            for setting in args.offer.split(","):
                column = f"{label}, {name}, {'11' if setting == 'available' else '36'}"
                rates, predictions = run(adapter or label, SETS[name], setting, registry, args.shortlist, args.limit,
                                         args.engine)
                columns[column] = rates
                print(f"{column}: SR {rates['overall']:.1f}, {rates[FORM]} wrong in form, {rates[SKIPPED]} answered "
                      "without a needed tool", file=sys.stderr)
                if args.out:
                    folder = args.out / column.replace(", ", "-")
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / "predictions.jsonl").write_text("".join(json.dumps(asdict(p)) + "\n"
                                                                      for p in predictions))
    counts = (FORM, SKIPPED)
    kinds = ["overall", *sorted({k for c in columns.values() for k in c} - {"overall", *counts}), *counts]
    table = "| kind | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns) + "\n" + "\n".join(
        f"| {kind} | " + " | ".join(f"{c[kind]:.1f}" if kind in c and kind not in counts else str(c.get(kind, "–"))
                                    for c in columns.values()) + " |" for kind in kinds)
    print(table)
    if args.out:
        (args.out / "table.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
