"""The step grammar as llguidance token masks: a `LogitsProcessor` for transformers, a logits processor for llama.cpp.

llguidance rather than xgrammar: it reads our GBNF as it is (`grammar_from("gbnf", …)`) and computes a token mask
in tens of microseconds. On llama.cpp it replaces llama.cpp's own grammar sampler, which llama-cpp-python applies
to all 49,152 tokens at every step (llama.cpp #4218): see docs/controller-prompting.md's speed table.
"""
from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)


def available() -> bool:
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=4)
def hf_tokenizer(tokenizer, n_vocab: int):
    """llguidance's view of a Hugging Face tokenizer (~1 s to build: cached)."""
    import llguidance.hf
    return llguidance.hf.from_tokenizer(tokenizer, n_vocab=n_vocab)


def llama_tokenizer(llm):
    """llguidance's view of a llama.cpp model's vocabulary (built once per model)."""
    import llguidance.llamacpp
    if getattr(llm, "_lltokenizer", None) is None:
        llm._lltokenizer = llguidance.llamacpp.lltokenizer_from_vocab(llm._model.vocab)
    return llm._lltokenizer


def matcher(gbnf: str, lltokenizer):
    """A matcher for `gbnf`, or None (unconstrained, with a warning) where llguidance is missing or refuses it."""
    if not available():
        log.warning("llguidance is not installed: replies are unconstrained (pip install llguidance)")
        return None
    import llguidance
    try:
        found = llguidance.LLMatcher(lltokenizer, llguidance.grammar_from("gbnf", gbnf), log_level=0)
    except ValueError as exc:  # GBNF that llguidance cannot convert
        log.warning("llguidance cannot read the step grammar (%s); this step runs unconstrained", exc)
        return None
    if found.is_error():
        log.warning("llguidance refused the step grammar (%s); this step runs unconstrained", found.get_error())
        return None
    return found


class _Mask:
    """Feeds the matcher the tokens generated since the last call, then computes the allowed-token bitmask. Once the
    grammar is complete only the end of text is allowed. One sequence: the agent decodes its steps one at a time."""

    def __init__(self, matcher, n_vocab: int, prompt_length: int):
        import llguidance.numpy
        self.matcher, self.n_vocab, self.seen = matcher, n_vocab, prompt_length
        self.bitmask = llguidance.numpy.allocate_token_bitmask(1, n_vocab)
        self._fill = llguidance.numpy.fill_next_token_bitmask

    def allowed(self, ids) -> np.ndarray:
        for token in ids[self.seen:]:
            self.matcher.consume_token(int(token))
        self.seen = len(ids)
        self._fill(self.matcher, self.bitmask, 0)
        return np.unpackbits(self.bitmask[0].view(np.uint8), bitorder="little")[:self.n_vocab].astype(bool)


class LlamaCppMask(_Mask):
    """llama-cpp-python's `logits_processor`: (token ids so far, logits) -> logits, edited in place."""

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        scores[~self.allowed(input_ids)] = -np.inf
        return scores


def transformers_mask(matcher, n_vocab: int, prompt_length: int):
    """transformers' `LogitsProcessor` for a matcher (batch 1)."""
    import torch
    from transformers import LogitsProcessor

    class TransformersMask(_Mask, LogitsProcessor):
        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            allowed = torch.from_numpy(self.allowed(input_ids[0])).to(scores.device)
            return scores.masked_fill(~allowed[: scores.shape[-1]], float("-inf"))

    return TransformersMask(matcher, n_vocab, prompt_length)
