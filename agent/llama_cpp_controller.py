"""A GGUF model on llama.cpp (llama-cpp-python) as the controller: the embedded default's CPU engine.

The prompt is rendered and tokenised exactly as for the transformers path (`format_prompt`, the same
tokenizer), so the model reads the token ids it was trained on; llama.cpp keeps the KV cache of the last
sequence and re-evaluates only what follows the longest common prefix (steps and turns share the prompt).
"""
from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path

from .chat_format import ChatFormat, encode_prompt, format_prompt, resolve_chat_format
from .controller import Capability, ControllerError, PromptTooLong, stream_until_stop, truncate_at
from .grammar import Grammar

log = logging.getLogger(__name__)


def engine_version() -> str | None:
    """llama-cpp-python's version, or None where it is not installed (the build can fail at install)."""
    try:
        import llama_cpp
    except ImportError:
        return None
    return llama_cpp.__version__


def compile_gbnf(llm, gbnf: str):
    """llama.cpp's grammar for `gbnf`, or None (unconstrained, with a warning) where llama.cpp cannot parse it.

    `LlamaGrammar.from_string` parses nothing: llama.cpp parses at sampling, and a NULL sampler from a grammar it
    refuses crashes the process (llama-cpp-python 0.3.36). So the grammar is parsed here first, by the same call."""
    import llama_cpp
    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, gbnf.encode(), b"root")
    if not sampler:
        log.warning("llama.cpp cannot parse the step grammar; this step runs unconstrained:\n%s", gbnf)
        return None
    llama_cpp.llama_sampler_free(sampler)
    return llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)


class LlamaCppController:
    """`model_path`: a GGUF file (an adapter merged in: see `gguf_merge`); `tokenizer`: the Hugging Face
    tokenizer the model was trained with (its chat template renders the prompt)."""

    capabilities = Capability.GRAMMAR

    def __init__(self, model_path: str | Path, tokenizer, *, chat_format: ChatFormat = "chat", n_ctx: int = 8192,
                 n_threads: int | None = None, name: str | None = None, matcher: str = "llguidance"):
        from llama_cpp import Llama
        try:
            self.llm = Llama(model_path=str(model_path), n_ctx=n_ctx, n_batch=512,
                             n_threads=n_threads or os.cpu_count(), verbose=False)
        except (ValueError, RuntimeError) as exc:  # llama.cpp refuses a broken or truncated file
            raise ControllerError(f"llama.cpp cannot load {model_path}: {exc}") from None
        weakref.finalize(self, self.llm.close)  # before interpreter teardown, where llama.cpp's own __del__ fails
        self.tokenizer = tokenizer
        self.chat_format = resolve_chat_format(tokenizer, chat_format)
        self.name = name or Path(model_path).stem
        self._lock = threading.Lock()  # one context: one sequence at a time
        self.matcher = matcher  # how a grammar is applied: "llguidance" (a token mask) or "llama.cpp" (its GBNF)

    def format_prompt(self, prompt: str) -> str:
        return format_prompt(self.tokenizer, prompt, self.chat_format)

    def encode_prompt(self, prompt: str) -> list[int]:
        return encode_prompt(self.tokenizer, prompt, self.chat_format)

    def _constraint(self, gbnf: str, prompt_length: int) -> dict:
        """create_completion's arguments that decode under `gbnf`: llguidance's mask by default, llama.cpp's own
        grammar sampler with `matcher="llama.cpp"` or without llguidance; none where the grammar is refused."""
        from llama_cpp import LogitsProcessorList

        from . import guidance
        if self.matcher == "llguidance" and guidance.available():
            found = guidance.matcher(gbnf, guidance.llama_tokenizer(self.llm))
            mask = guidance.LlamaCppMask(found, self.llm.n_vocab(), prompt_length) if found is not None else None
            return {"logits_processor": LogitsProcessorList([mask])} if mask else {}
        compiled = compile_gbnf(self.llm, gbnf)
        return {"grammar": compiled} if compiled is not None else {}

    def _completion(self, ids: list[int], stop: Sequence[str], max_new_tokens: int, temperature: float,
                    **constraint) -> Iterator[str]:
        room = self.llm.n_ctx() - len(ids)
        if room < min(max_new_tokens, 32):
            raise PromptTooLong(f"a {len(ids)}-token prompt leaves no room for a reply in the "
                                f"{self.llm.n_ctx()}-token context of {self.name}")
        # temperature 0 is llama.cpp's greedy sampler; otherwise plain sampling, as the transformers path does
        chunks = self.llm.create_completion(ids, max_tokens=min(max_new_tokens, room), stop=list(stop), stream=True,
                                           temperature=temperature, top_k=0, top_p=1.0, min_p=0.0,
                                           repeat_penalty=1.0, **constraint)
        return (chunk["choices"][0]["text"] for chunk in chunks)

    def _texts(self, prompt: str, stop: Sequence[str], max_new_tokens: int, temperature: float,
               grammar: Grammar | None) -> Iterator[str]:
        """The reply's pieces: under the grammar as far as it reaches, then on unconstrained from the cached prefix."""
        ids = self.encode_prompt(prompt)
        constraint = self._constraint(grammar.gbnf, len(ids)) if grammar else {}
        if not constraint:
            yield from self._completion(ids, stop, max_new_tokens, temperature)
            return
        head = ""
        for piece in self._completion(ids, stop, max_new_tokens, temperature, **constraint):
            head += piece
            yield piece
        if grammar.free_after and head.endswith(grammar.free_after):
            written = self.tokenizer(head, add_special_tokens=False)["input_ids"]
            yield from self._completion(ids + written, stop, max_new_tokens - len(written), temperature)

    def generate(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
                 temperature: float = 0.0, n: int = 1, grammar: Grammar | None = None) -> list[str]:
        with self._lock:  # n samples in a row: each re-evaluates nothing of the cached prompt
            return [truncate_at("".join(self._texts(prompt, stop, max_new_tokens, temperature, grammar)), stop)
                    for _ in range(n)]

    def stream(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
               temperature: float = 0.0, grammar: Grammar | None = None) -> Iterator[str]:
        with self._lock:
            yield from stream_until_stop(self._texts(prompt, stop, max_new_tokens, temperature, grammar), stop)

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        raise ControllerError(f"{self.name} runs on llama.cpp, which this app uses for generation only; "
                              "scoring (Toolformer, ToolACE-R) runs on the transformers path")
