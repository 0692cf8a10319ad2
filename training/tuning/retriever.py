"""Train the shortlist's classifier: embeddings of instructions -> one logistic regression per tool (one-vs-rest).

Multi-label: a record's labels are every tool its turn calls (both tools of a chain), and a record that calls no
tool is a row with no label at all, which teaches each tool's regression that such words need none of them. Each
tool's sigmoid is then its own probability of being needed, so the shortlist can offer every tool above a
threshold rather than a fixed top k. The adapter's records teach it how people ask for the tools they cover; every
other tool the registry holds is taught by the template teacher's phrasings and by its own name and description,
so the classifier knows the whole tool set it is keyed by. Seconds to fit (scikit-learn) once the instructions
are embedded.
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

C = 100.0  # inverse regularisation of each regression; chosen with the threshold on the dev set (see the docs)
MIN_EXAMPLES = 20  # tools with fewer examples in the records get this many template phrasings


def labels(record: Record, names: set[str]) -> list[str]:
    """The tools a record's words ask for: every tool its turn calls, the steps it is given included (the chat
    draws its list once, before the turn's first step, so a chain's first tool must be offered too)."""
    return [tool for tool in record.used_tools() if tool in names]


def examples(records: Sequence[Record], registry: ToolRegistry, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """(text, tool names) rows: each record's instruction with every tool it calls (none for a record that calls
    no tool), template phrasings for the tools the records leave short, and every tool's `name: description`."""
    tools = registry.all()
    names = {t.name for t in tools}
    rows = [(r.instruction, labels(r, names)) for r in records]
    counts = Counter(tool for _, row in rows for tool in row)
    short = [t for t in tools if counts[t.name] < MIN_EXAMPLES and t.phrasings]
    for i, tool in enumerate(short):
        request = TeacherRequest("", Annotation("a photo", {"object": [0, 0, 64, 64]}), [tool],
                                 MIN_EXAMPLES - counts[tool.name], seed + i)
        candidates, _ = parse_reply(TemplateTeacher().instruct(request), registry)
        rows += [(c.instruction, [c.tool.name]) for c in candidates]
    rows += [(f"{t.name}: {t.description}", [t.name]) for t in tools]
    return [text for text, _ in rows], [row for _, row in rows]


def train_retriever(records: Sequence[Record], registry: ToolRegistry, out: Path, *, data: str = "",
                    seed: int = 0, c: float = C) -> ClassifierRetriever:
    """Fit the multi-label classifier on `records` for every tool of `registry`; saved in `out` (retriever.json
    and classifier.safetensors)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import MultiLabelBinarizer
    texts, label_sets = examples(records, registry, seed)
    binarizer = MultiLabelBinarizer(classes=sorted(t.name for t in registry.all()))
    targets = binarizer.fit_transform(label_sets)
    model = OneVsRestClassifier(LogisticRegression(C=c, max_iter=3000, random_state=seed)).fit(embed(texts), targets)
    coef = [estimator.coef_[0] for estimator in model.estimators_]
    intercept = [estimator.intercept_[0] for estimator in model.estimators_]
    retriever = ClassifierRetriever(list(binarizer.classes_), np.vstack(coef), np.array(intercept), ENCODER_ID, out,
                                    multilabel=True)
    digest = hashlib.sha256("\n".join(f"{t}\t{','.join(row)}" for t, row in zip(texts, label_sets))
                            .encode()).hexdigest()
    per_tool = Counter(tool for row in label_sets for tool in row)
    retriever.save(out, {"data": data, "examples": len(texts), "no_tool_examples": sum(not row for row in label_sets),
                         "examples_sha256": digest, "C": c, "per_tool": dict(sorted(per_tool.items()))})
    return retriever
