"""Recall@k of the shortlist on hand-written cases: the shipped classifier against BM25 (no weights), k = 1..8,
over the app's available tools and over all 36. A two-step case counts both gold tools.

    python bench/shortlist.py [--data assets/eval/handwritten.jsonl] [--retriever FOLDER]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from agent.retriever import BM25Retriever, ClassifierRetriever
from agent.shortlist import SHIPPED_RETRIEVER, Shortlist
from training.evaluation.evaluate import load_cases
from training.data.render import conversation
from visual_tools import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent


def recall(shortlist: Shortlist, cases, names: list[str], k: int) -> float:
    hits = total = 0
    for case in cases:
        gold = set(case.used_tools())
        ranked = shortlist.rank(case.instruction, names, conversation(case))[:k]
        hits += len(gold & set(ranked))
        total += len(gold)
    return 100 * hits / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "assets" / "eval" / "handwritten.jsonl"))
    parser.add_argument("--retriever", default=str(SHIPPED_RETRIEVER), help="the classifier's folder")
    args = parser.parse_args()
    registry = ToolRegistry.from_load(None)
    cases = [c for c in load_cases(args.data, registry.tools)[0] if c.steps]
    settings = {"available": [t.name for t in registry.available()], "all": [t.name for t in registry.all()]}
    retrievers = {"classifier": ClassifierRetriever.load(Path(args.retriever), settings["all"]),
                  "BM25": BM25Retriever(registry.all())}
    ks = range(1, 9)
    print(f"recall@k (%) of gold tools, {len(cases)} tool-using cases of {Path(args.data).name}\n")
    print("| retriever | tools | " + " | ".join(f"@{k}" for k in ks) + " | ms/query |")
    print("|---|---|" + "---|" * (len(ks) + 1))
    for label, retriever in retrievers.items():
        shortlist = Shortlist(retriever)
        for setting, names in settings.items():
            started = time.perf_counter()
            row = [recall(shortlist, cases, names, k) for k in ks]
            ms = (time.perf_counter() - started) * 1000 / (len(ks) * len(cases))
            print(f"| {label} | {setting} ({len(names)}) | " + " | ".join(f"{r:.1f}" for r in row) + f" | {ms:.1f} |")


if __name__ == "__main__":
    main()
