"""Toolformer's filter: L⁺/L⁻ of 200 candidate calls, batched vs one forward pass per candidate, same run.

The candidates look like what annotation produced in a real run (per Calculator text: ~9 candidates, ~4
positions, ~4.6 distinct calls): 25 texts of the synthetic corpus, 4 positions each (word starts after the
second number), 2 calls sampled per position from the text's four expressions (a+b, a-b, a*b, a/b), seeded.
Prints a table, the ratio, and the largest difference between the two ways' losses (they must agree).

    python bench/toolformer_filter.py [--model embedded] [--repeats 2]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.toolformer.annotate import NUMBER, Candidate, execute, score  # noqa: E402
from training.toolformer.corpus import make_corpus  # noqa: E402
from training.toolformer.lm import load_lm  # noqa: E402
from visual_tools.text_tools import Calculator  # noqa: E402


def candidates(tokenizer, n_texts: int = 25, positions: int = 4, samples: int = 2
               ) -> tuple[list[Candidate], dict[int, list[int]]]:
    rows = [r for r in make_corpus(8 * n_texts, seed=3) if r["kind"] == "calculator"]
    calculator, rng, cands, x_ids = Calculator(), random.Random(0), [], {}
    for row in rows:
        ids = tokenizer(" " + row["text"], add_special_tokens=False)["input_ids"]
        starts = [i for i in range(len(ids)) if len(NUMBER.findall(tokenizer.decode(ids[:i]))) >= 2
                  and tokenizer.decode(ids[i: i + 1]).startswith(" ")][:positions]
        if len(starts) < positions:
            continue
        n = len(x_ids)
        x_ids[n] = ids
        a, b = (float(v) for v in NUMBER.findall(row["text"])[:2])
        expressions = [f"{a:g} + {b:g}", f"{a:g} - {b:g}", f"{a:g} * {b:g}", f"{a:g} / {b:g}"]
        for position in starts:
            for args in rng.choices(expressions, k=samples):
                cands.append(Candidate(n, "Calculator", position, 0.0, args, execute(calculator, args)[0]))
        if len(x_ids) == n_texts:
            break
    return cands, x_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--repeats", type=int, default=2, help="best of N, alternating the two ways")
    args = parser.parse_args()
    lm = load_lm(args.model)
    cands, x_ids = candidates(lm.tokenizer)
    twins = [Candidate(**vars(c)) for c in cands]
    score(lm.model, lm.tokenizer, cands[:10], x_ids)  # warm-up
    times = {"one forward per candidate": [], "batched (shared prefixes, 32 per pass)": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        score(lm.model, lm.tokenizer, twins, x_ids, batched=False)
        times["one forward per candidate"].append(time.perf_counter() - start)
        start = time.perf_counter()
        score(lm.model, lm.tokenizer, cands, x_ids, batched=True)
        times["batched (shared prefixes, 32 per pass)"].append(time.perf_counter() - start)
    diff = max(abs(getattr(a, f) - getattr(b, f)) for a, b in zip(cands, twins)
               for f in ("l_plus", "l_none", "l_empty"))
    best = {k: min(v) for k, v in times.items()}
    print(f"{len(cands)} candidates on {lm.name}, best of {args.repeats}\n")
    print("| way | seconds | candidates / s |\n|---|---|---|")
    for way, seconds in best.items():
        print(f"| {way} | {seconds:.2f} | {len(cands) / seconds:.1f} |")
    ratio = best["one forward per candidate"] / best["batched (shared prefixes, 32 per pass)"]
    print(f"\nspeed-up: {ratio:.2f}x (target ≥ 3x); largest loss difference between the two ways: {diff:.2e}")


if __name__ == "__main__":
    main()
