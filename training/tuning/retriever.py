"""Train the shortlist's classifier: embeddings of instructions -> logistic regression on their gold tools.

The adapter's records teach it how people ask for the tools they cover; every other tool the registry holds is
taught by the template teacher's phrasings and by its own name and description, so the classifier knows the whole
tool set it is keyed by. Seconds to fit (scikit-learn) once the instructions are embedded.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from agent.retriever import ENCODER_ID, ClassifierRetriever, embed
from visual_tools import ToolRegistry

from ..data.generate import parse_reply
from ..data.records import Record
from ..data.teachers import Annotation, TeacherRequest, TemplateTeacher

C = 10.0  # inverse regularisation; 1, 10 and 100 measured: 10 was best at recall@1 and @2
MIN_EXAMPLES = 20  # tools with fewer examples in the records get this many template phrasings


def examples(records: Sequence[Record], registry: ToolRegistry, seed: int = 0) -> tuple[list[str], list[str]]:
    """(text, tool name) pairs: each record's instruction with each tool it calls itself, template phrasings for
    the tools the records leave short, and every tool's `name: description`."""
    tools = registry.all()
    names = {t.name for t in tools}
    pairs = [(r.instruction, tool) for r in records for tool in dict.fromkeys(r.used_tools()[r.given_steps:])
             if tool in names]
    counts = Counter(tool for _, tool in pairs)
    short = [t for t in tools if counts[t.name] < MIN_EXAMPLES and t.phrasings]
    for i, tool in enumerate(short):
        request = TeacherRequest("", Annotation("a photo", {"object": [0, 0, 64, 64]}), [tool],
                                 MIN_EXAMPLES - counts[tool.name], seed + i)
        candidates, _ = parse_reply(TemplateTeacher().instruct(request), registry)
        pairs += [(c.instruction, c.tool.name) for c in candidates]
    pairs += [(f"{t.name}: {t.description}", t.name) for t in tools]
    return [text for text, _ in pairs], [tool for _, tool in pairs]


def train_retriever(records: Sequence[Record], registry: ToolRegistry, out: Path, *, data: str = "",
                    seed: int = 0) -> ClassifierRetriever:
    """Fit the classifier on `records` for every tool of `registry`; saved in `out` (retriever.json and
    classifier.safetensors)."""
    from sklearn.linear_model import LogisticRegression
    texts, labels = examples(records, registry, seed)
    model = LogisticRegression(C=C, max_iter=3000, random_state=seed).fit(embed(texts), labels)
    coef, intercept = model.coef_, model.intercept_
    if len(model.classes_) == 2:  # scikit-learn keeps one row for two classes: P(second); make it a softmax pair
        coef, intercept = np.vstack([-coef[0] / 2, coef[0] / 2]), np.array([-intercept[0] / 2, intercept[0] / 2])
    retriever = ClassifierRetriever(list(model.classes_), coef, intercept, ENCODER_ID, out)
    digest = hashlib.sha256("\n".join(f"{t}\t{label}" for t, label in zip(texts, labels)).encode()).hexdigest()
    retriever.save(out, {"data": data, "examples": len(texts), "examples_sha256": digest, "C": C,
                         "per_tool": dict(sorted(Counter(labels).items()))})
    return retriever
