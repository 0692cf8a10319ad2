"""Requests for a tool that is not here: how often the shortlist names it (assets/eval/missing-tools/dev.jsonl, 20
requests whose tool has no weights on this machine) against false alarms on the hand-written cases (dev) and
the blind ones, whose tools are all here or none is needed, for a grid of the two rules' settings.

    python bench/missing.py [--blind assets/eval/blind.jsonl] [--out FILE]

A request is flagged when the classifier gives an absent tool at least MIN and RATIO times the best available one
(`Shortlist.missing`); below it, how many cases no available tool is likely for (`Shortlist.needs_none`: those turns
are answered directly). The settings are chosen on the dev files only; the blind columns report.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent import shortlist as shortlist_module
from agent.shortlist import SHIPPED_RETRIEVER, load_shortlist
from visual_tools import ToolRegistry

from shortlist import Cached  # noqa: E402  (bench/shortlist.py: a retriever's scores, once per text)

ROOT = Path(__file__).resolve().parent.parent
GRID = {"MISSING_MIN": (0.02, 0.05, 0.1, 0.2), "MISSING_RATIO": (0.5, 1.0, 2.0, 4.0)}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--missing", type=Path, default=ROOT / "assets/eval/missing-tools/dev.jsonl")
    parser.add_argument("--dev", type=Path, default=ROOT / "assets/eval/handwritten.jsonl")
    parser.add_argument("--blind", type=Path, default=ROOT / "assets/eval/blind.jsonl")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    registry = ToolRegistry.from_load()
    available = [t.name for t in registry.available()]
    shortlist, _ = load_shortlist(5, SHIPPED_RETRIEVER, registry.all())
    shortlist.retriever = Cached(shortlist.retriever)  # the grid asks for the same texts again
    absent = [r for r in rows(args.missing) if r["tool"] not in available]
    here = {name: [r for r in rows(path) if all(s["tool"] in available for s in r["gold"])]
            for name, path in (("dev", args.dev), ("blind", args.blind))}
    lines = [f"available here: {len(available)} of {len(registry.all())} tools; {len(absent)} requests for absent "
             f"tools; {len(here['dev'])} dev / {len(here['blind'])} blind cases whose tools are here", "",
             "| min | ratio | named right | flagged | false alarms dev | false alarms blind |",
             "|---|---|---|---|---|---|"]
    default = tuple(getattr(shortlist_module, k) for k in GRID)
    for setting in itertools.product(*GRID.values()):
        for key, value in zip(GRID, setting):
            setattr(shortlist_module, key, value)
        named = [shortlist.missing(r["input"], available) for r in absent]
        right = sum(n == r["tool"] for n, r in zip(named, absent))
        flagged = sum(n is not None for n in named)
        alarms = {k: sum(shortlist.missing(r["input"], available) is not None for r in v) for k, v in here.items()}
        mark = " (shipped)" if setting == default else ""
        lines.append(f"| {setting[0]} | {setting[1]}{mark} | {right}/{len(absent)} | "
                     f"{flagged}/{len(absent)} | {alarms['dev']}/{len(here['dev'])} | "
                     f"{alarms['blind']}/{len(here['blind'])} |")
    lines += ["", "No tool likely (`Shortlist.needs_none`): the cases answered directly, by the highest probability of "
              "an available tool", "", "| below | tool cases answered directly dev | blind | no-tool cases answered "
              "directly dev | blind |", "|---|---|---|---|---|"]
    cases = {name: rows(path) for name, path in (("dev", args.dev), ("blind", args.blind))}
    shipped = shortlist_module.NO_TOOL_BELOW
    for below in (0.01, 0.02, 0.05, 0.1):
        shortlist_module.NO_TOOL_BELOW = below
        cells = []
        for wanted in (True, False):
            for name in ("dev", "blind"):
                group = [r for r in cases[name] if bool(r["gold"]) == wanted]
                cells.append(f"{sum(shortlist.needs_none(r['input'], available) for r in group)}/{len(group)}")
        mark = " (shipped)" if below == shipped else ""
        lines.append(f"| {below}{mark} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
