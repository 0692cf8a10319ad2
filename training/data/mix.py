"""A training mixture: so many records of each category, drawn from generated records (an adapter's data recipe).

Categories: "no tool", "two-step", "two-step, continued" (the first step given, the model writes the second and the
answer: every two-step record also offers this copy), or the tool a single-step record calls.
"""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence

from .records import Record, record_id

NO_TOOL, TWO_STEP, CONTINUED = "no tool", "two-step", "two-step, continued"


def category(record: Record) -> str:
    if not record.steps:
        return NO_TOOL
    if len(record.steps) > 1:
        return CONTINUED if record.given_steps else TWO_STEP
    return record.steps[0].tool


def mix(records: Sequence[Record], take: Mapping[str, int], seed: int = 0) -> tuple[list[Record], dict[str, int]]:
    """`take[c]` records of each category c (all there are where fewer), and the shortfall per category."""
    pools: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        pools[category(record)].append(record)
        if len(record.steps) == 2 and not record.given_steps:
            pools[CONTINUED].append(record.model_copy(update={"id": record_id(record.id, "continued"),
                                                              "given_steps": 1, "kind": "context"}))
    rng = random.Random(seed)
    chosen, short = [], {}
    for name, n in take.items():
        pool = pools.get(name, [])
        chosen += rng.sample(pool, min(n, len(pool)))
        if len(pool) < n:
            short[name] = n - len(pool)
    return chosen, short
