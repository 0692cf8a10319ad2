"""The step grammar on transformers: llguidance's matcher as a `LogitsProcessor`.

llguidance rather than xgrammar: it reads our GBNF as it is (its `gbnf_to_lark`), computes a token mask in tens of
microseconds, and ships torch helpers for the mask; xgrammar would need the grammar rewritten in its EBNF dialect.
"""
from __future__ import annotations

import logging
from functools import lru_cache

import torch
from transformers import LogitsProcessor

log = logging.getLogger(__name__)


def available() -> bool:
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=4)
def _lltokenizer(tokenizer, n_vocab: int):
    import llguidance.hf
    return llguidance.hf.from_tokenizer(tokenizer, n_vocab=n_vocab)


@lru_cache(maxsize=64)
def _lark(gbnf: str) -> str:
    from llguidance.gbnf_to_lark import gbnf_to_lark
    return gbnf_to_lark(gbnf)


class GrammarProcessor(LogitsProcessor):
    """Masks every token the grammar does not allow next; once the grammar is complete, only the end of text.
    One sequence (batch 1): the agent's steps are decoded one at a time."""

    def __init__(self, matcher, n_vocab: int, prompt_length: int):
        import llguidance.torch
        self.matcher, self.prompt_length = matcher, prompt_length
        self.bitmask = llguidance.torch.allocate_token_bitmask(1, n_vocab)
        self._fill, self._apply = llguidance.torch.fill_next_token_bitmask, llguidance.torch.apply_token_bitmask_inplace

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if input_ids.shape[1] > self.prompt_length:
            self.matcher.consume_token(int(input_ids[0, -1]))
        self._fill(self.matcher, self.bitmask, 0)
        self._apply(scores[0], self.bitmask[0].to(scores.device))
        return scores


def processor(gbnf: str, tokenizer, n_vocab: int, prompt_length: int) -> GrammarProcessor | None:
    """A processor for `gbnf`, or None (unconstrained, with a warning) where llguidance is missing or refuses it."""
    if not available():
        log.warning("llguidance is not installed: transformers replies are unconstrained (pip install llguidance)")
        return None
    import llguidance
    try:
        matcher = llguidance.LLMatcher(_lltokenizer(tokenizer, n_vocab),
                                       llguidance.LLMatcher.grammar_from_lark(_lark(gbnf)), log_level=0)
    except Exception as exc:  # llguidance raises its own errors for a grammar it cannot compile
        log.warning("llguidance cannot compile the step grammar (%s); this step runs unconstrained", exc)
        return None
    if matcher.is_error():
        log.warning("llguidance refused the step grammar (%s); this step runs unconstrained", matcher.get_error())
        return None
    return GrammarProcessor(matcher, n_vocab, prompt_length)
