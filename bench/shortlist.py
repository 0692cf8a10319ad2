"""The shortlist on hand-written cases (dev) and the blind ones: recall@k of the shipped classifier against BM25
(no weights), k = 1..8, and the classifier's offered lists at each threshold (ranked, sized by confidence, at most
5), over the app's available tools and over all 36. A two-step case counts both gold tools.

    python bench/shortlist.py [--data assets/eval/handwritten.jsonl] [--blind assets/eval/blind.jsonl]
                              [--retriever FOLDER]

The threshold table's columns: *recall*, the cases whose every gold tool is in the offered list (a case that calls
no tool counts as recalled); *top-1*, the single-tool cases whose list starts with their tool; *size*, the mean
list length. The threshold is chosen on the dev set only (`choose`); blind is reported, never chosen on.
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from agent.retriever import BM25Retriever, ClassifierRetriever
from agent.shortlist import DEFAULT_K, SHIPPED_RETRIEVER, Shortlist
from training.data.records import Record
from training.data.render import conversation
from training.evaluation.evaluate import load_cases
from visual_tools import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


class Cached:
    """A retriever's scores, computed once per text (the threshold sweep asks for the same texts again)."""

    def __init__(self, retriever):
        self.retriever, self.name = retriever, retriever.name
        self.probabilities = getattr(retriever, "probabilities", False)
        self.memo: dict[str, dict[str, float]] = {}

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.retriever.scores(missing)))
        return [self.memo[t] for t in texts]


def gold(case: Record) -> list[str]:
    """The tools the case must call (from its given steps on)."""
    return list(dict.fromkeys(step.tool for step in case.steps[case.given_steps:]))


def recall(shortlist: Shortlist, cases, names: list[str], k: int) -> float:
    hits = total = 0
    for case in cases:
        wanted = set(gold(case))
        ranked = shortlist.rank(case.instruction, names, conversation(case))[:k]
        hits += len(wanted & set(ranked))
        total += len(wanted)
    return 100 * hits / total


def offered(shortlist: Shortlist, cases, names: list[str], k: int | None = None) -> tuple[float, float, float]:
    """(recall %, top-1 % of the single-tool cases, mean size) of the lists `shortlist.offer` gives the cases."""
    whole = top = single = size = 0
    for case in cases:
        wanted = gold(case)
        offer = shortlist.offer(case.instruction, names, conversation(case), k=k)
        whole += set(wanted) <= set(offer)
        if len(wanted) == 1:
            single += 1
            top += offer[0] == wanted[0]
        size += len(offer)
    return 100 * whole / len(cases), 100 * top / max(single, 1), size / len(cases)


def choose(rows: dict[float, list[tuple[float, float, float]]]) -> float:
    """The dev set's threshold: the best recall (the lower of the 11- and 36-tool settings'), ties to the smaller
    mean list size (averaged over the two)."""
    return min(rows, key=lambda t: (-min(r[0] for r in rows[t]), sum(r[2] for r in rows[t]) / len(rows[t])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "assets" / "eval" / "handwritten.jsonl"),
                        help="the dev cases (the threshold is chosen on them)")
    parser.add_argument("--blind", default=str(ROOT / "assets" / "eval" / "blind.jsonl"),
                        help="the blind cases (reported only)")
    parser.add_argument("--retriever", default=str(SHIPPED_RETRIEVER), help="the classifier's folder")
    args = parser.parse_args()
    registry = ToolRegistry.from_load(None)
    sets = {"dev": load_cases(args.data, registry.tools)[0], "blind": load_cases(args.blind, registry.tools)[0]}
    settings = {"available": [t.name for t in registry.available()], "all": [t.name for t in registry.all()]}
    classifier = ClassifierRetriever.load(Path(args.retriever), settings["all"])
    retrievers = {"classifier": Cached(classifier), "BM25": Cached(BM25Retriever(registry.all()))}
    kind = "multi-label, sigmoid" if classifier.multilabel else "single-label, softmax"

    ks = range(1, 9)
    print(f"recall@k (%) of gold tools over the tool-using cases ({kind} classifier)\n")
    print("| retriever | cases | tools | " + " | ".join(f"@{k}" for k in ks) + " |")
    print("|---|---|---|" + "---|" * len(ks))
    for set_name, cases in sets.items():
        using = [c for c in cases if gold(c)]
        for label, retriever in retrievers.items():
            shortlist = Shortlist(retriever)
            for setting, names in settings.items():
                row = [recall(shortlist, using, names, k) for k in ks]
                print(f"| {label} | {set_name} ({len(using)}) | {setting} ({len(names)}) | "
                      + " | ".join(f"{r:.1f}" for r in row) + " |")
    texts = [c.instruction for c in sets["dev"]]
    classifier.scores(texts[:1])  # the encoder loaded
    started = time.perf_counter()
    for text in texts:
        classifier.scores([text])
    print(f"\na query costs {(time.perf_counter() - started) * 1000 / len(texts):.1f} ms (the classifier, one text)")

    sizes = ", ".join(f"{name} {len(cases)}" for name, cases in sets.items())
    print(f"\noffered lists (at most {DEFAULT_K}; cases: {sizes}): recall % (every gold tool offered; no-tool cases "
          "count), top-1 % (single-tool cases), mean size\n")
    print("| offer | tools | dev recall | dev top-1 | dev size | blind recall | blind top-1 | blind size |")
    print("|---|---|---|---|---|---|---|---|")
    dev: dict[float, list[tuple[float, float, float]]] = {}
    base = Shortlist(retrievers["classifier"])
    lines = [(f"threshold {t:g}", replace(base, threshold=t), None) for t in THRESHOLDS]
    lines += [(f"top {DEFAULT_K} (fixed)", base, DEFAULT_K),
              (f"BM25 top {DEFAULT_K}", Shortlist(retrievers["BM25"]), None)]
    for label, shortlist, k in lines:
        for setting, names in settings.items():
            cells = {name: offered(shortlist, cases, names, k) for name, cases in sets.items()}
            if label.startswith("threshold"):
                dev.setdefault(shortlist.threshold, []).append(cells["dev"])
            print(f"| {label} | {setting} ({len(names)}) | "
                  + " | ".join(f"{r:.1f} | {t:.1f} | {s:.2f}" for r, t, s in cells.values()) + " |")
    print(f"\nchosen on dev (best recall, the lower of the two tool settings; ties: the smaller mean size): "
          f"threshold {choose(dev):g}")


if __name__ == "__main__":
    main()
