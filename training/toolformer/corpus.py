"""A synthetic corpus for Toolformer on this machine: short texts where a calculation or today's date helps.

The paper annotates CCNet, which is not available offline; these templated texts (our own, free to ship) have
the property its heuristics look for — three numbers where one follows from two, or a date word — and each
Calendar text carries its document date, which the Calendar returns (as the paper's does). Labelled synthetic
everywhere it is used.
"""
from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from datetime import date, timedelta
from pathlib import Path

SVAMP = Path(__file__).resolve().parents[2] / "assets" / "svamp" / "SVAMP.json"  # the math problems evaluated on

NAMES = ["Anna", "Ben", "Chloe", "David", "Emma", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kemi", "Liam"]
ITEMS = ["apples", "books", "tickets", "chairs", "boxes", "stamps", "plants", "cakes", "shirts", "coins"]
CITIES = ["Paris", "Lagos", "Lima", "Oslo", "Seoul", "Cairo", "Quito", "Perth", "Porto", "Hanoi"]


def _calculator_text(rng: random.Random) -> str:
    a, b = rng.randint(3, 90), rng.randint(2, 40)
    name, item, city = rng.choice(NAMES), rng.choice(ITEMS), rng.choice(CITIES)
    y1 = rng.randint(1950, 2000)
    y2 = y1 + rng.randint(2, 25)
    templates = [
        f"{name} bought {a} {item} on Monday and {b} more on Tuesday, so {name} bought {a + b} {item} in total.",
        f"The school has {a} classes with {b} pupils each, which makes {a * b} pupils.",
        f"Out of {a + b} {item}, {b} were sold, leaving {a} {item} in the shop.",
        f"The trip of {a * b} km took {b} hours, an average of {a} km per hour.",
        f"I moved to {city} in {y1} and stayed there until {y2}, so in total, it was {y2 - y1} years.",
        f"A total of {a * b} goals were scored in {b} matches, an average of {a} goals per match.",
        f"From this, we have {a} * {b} minutes = {a * b} minutes.",
        f"The box held {a} {item}. After {b} more were added, it held {a + b} {item}.",
        f"Each of the {b} shelves holds {a} {item}, so the shelves hold {a * b} {item} together.",
        f"The price went up from {a} dollars to {a + b} dollars, a rise of {b} dollars.",
    ]
    return rng.choice(templates)


def _calendar_text(rng: random.Random, day: date) -> str:
    christmas = date(day.year if day <= date(day.year, 12, 25) else day.year + 1, 12, 25)
    templates = [
        f"Today is {day:%A}, so the market in the square is open.",
        f"The current day of the week is {day:%A}.",
        f"Today is {day:%B} {day.day}, {day.year}, and the new library opens.",
        f"The number of days from now until Christmas is {(christmas - day).days}.",
        f"This year is {day.year}, and the festival takes place again this month, in {day:%B}.",
        f"Tomorrow will be {(day + timedelta(days=1)):%A}, the last day of the sale.",
    ]
    return rng.choice(templates)


def make_corpus(n: int, seed: int = 0, calendar_share: float = 0.3) -> list[dict]:
    """`n` rows {"text", "date", "kind"}: Calculator-style texts and (a `calendar_share` of) Calendar-style ones."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        day = date(2020, 1, 1) + timedelta(days=rng.randint(0, 6 * 365))
        if rng.random() < calendar_share:
            rows.append({"text": _calendar_text(rng, day), "date": day.isoformat(), "kind": "calendar"})
        else:
            rows.append({"text": _calculator_text(rng), "date": day.isoformat(), "kind": "calculator"})
    return rows


def cloze(rows: list[dict]) -> list[dict]:
    """Calculator texts cut before their last number, which becomes the answer: {"id", "prompt", "answer"}."""
    out = []
    for n, row in enumerate(rows):
        numbers = list(re.finditer(r"\d+", row["text"]))
        if row.get("kind") == "calculator" and numbers:
            out.append({"id": str(n), "prompt": row["text"][: numbers[-1].start()].rstrip(),
                        "answer": float(numbers[-1].group())})
    return out


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
