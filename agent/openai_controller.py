"""An OpenAI-compatible HTTP server (OpenAI, vLLM, llama.cpp, `python -m agent serve`) as the controller."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import httpx
import openai

from .controller import Capability, ControllerError, stream_until_stop, truncate_at
from .grammar import Grammar
from .prompts import Prompt

T = TypeVar("T")
log = logging.getLogger(__name__)


class OpenAIController:
    """chat/completions for generation; completions with `echo` + `logprobs` for scoring (as vLLM serves).
    A grammar is sent until the server refuses one: from then on this controller lacks `Capability.GRAMMAR`."""

    capabilities = Capability.GRAMMAR

    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 1):
        self.base_url = base_url.rstrip("/")
        self.client = openai.OpenAI(base_url=self.base_url, timeout=timeout, max_retries=max_retries,
                                    api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY")
        self._model = model
        self.name = f"{model or 'first model'} @ {self.base_url}"

    def _call(self, request: Callable[[], T]) -> T:
        try:
            return request()
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc) from None
        except openai.APIError as exc:
            raise ControllerError(f"the controller at {self.base_url} answered with an error: {exc}") from None

    def _unreachable(self, exc: openai.APIConnectionError) -> ControllerError:
        return ControllerError(f"cannot reach the controller at {self.base_url} ({exc.__cause__ or exc})")

    @property
    def model(self) -> str:
        if self._model is None:
            models = self._call(lambda: self.client.models.list()).data
            if not models:
                raise ControllerError(f"the server at {self.base_url} serves no model")
            self._model = models[0].id
            self.name = f"{self._model} @ {self.base_url}"
        return self._model

    def _chat(self, prompt: str, stop: Sequence[str], grammar: Grammar | None = None, **kwargs):
        """One chat request; a grammar goes in vLLM's `structured_outputs` field (vLLM >= 0.12) until the server
        refuses one, after which this controller asks unconstrained (said once in the log and in `capabilities`)."""
        messages = [{"role": "user", "content": prompt}]
        reply = {}
        if isinstance(prompt, Prompt) and prompt.reply:  # the reply so far, continued (vLLM's chat parameters)
            messages = [{"role": "user", "content": prompt.head}, {"role": "assistant", "content": prompt.reply}]
            reply = {"continue_final_message": True, "add_generation_prompt": False}

        def send(constrained: bool):
            extra = {**reply, **({"structured_outputs": {"grammar": grammar.whole}} if constrained else {})}
            return self.client.chat.completions.create(
                model=self.model, messages=messages, stop=list(stop)[:4] or None, extra_body=extra or None,
                **kwargs)  # the API takes at most 4 stop strings

        if grammar is None or Capability.GRAMMAR not in self.capabilities:
            return send(False)
        try:
            return send(True)
        except openai.BadRequestError as exc:
            self.capabilities = self.capabilities & ~Capability.GRAMMAR
            log.warning("%s refused a grammar (%s): its replies are unconstrained", self.base_url, str(exc)[:300])
            return send(False)

    def generate(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
                 temperature: float = 0.0, n: int = 1, grammar: Grammar | None = None) -> list[str]:
        reply = self._call(lambda: self._chat(prompt, stop, grammar, max_tokens=max_new_tokens,
                                              temperature=temperature, n=n))
        return [truncate_at(choice.message.content or "", stop) for choice in reply.choices]

    def stream(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
               temperature: float = 0.0, grammar: Grammar | None = None) -> Iterator[str]:
        chunks = self._call(lambda: self._chat(prompt, stop, grammar, max_tokens=max_new_tokens,
                                               temperature=temperature, stream=True))

        def texts() -> Iterator[str]:
            try:
                for chunk in chunks:
                    if chunk.choices and chunk.choices[0].delta.content:
                        yield chunk.choices[0].delta.content
            except (openai.APIError, httpx.HTTPError) as exc:  # a server that dies mid-reply: httpx's own errors
                raise ControllerError(f"the stream from {self.base_url} broke off: {exc}") from None

        try:
            yield from stream_until_stop(texts(), stop)
        finally:
            chunks.close()

    def with_adapter(self, name: str, path: str) -> "OpenAIController":
        """Ask the server to load a LoRA adapter (vLLM's `/v1/load_lora_adapter`; vLLM needs `--enable-lora` and
        `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`) and return a controller for it. `path` is read by the server."""
        try:
            self.client.post("/load_lora_adapter", body={"lora_name": name, "lora_path": path}, cast_to=str)
        except openai.NotFoundError:
            raise ControllerError(f"the server at {self.base_url} cannot load LoRA adapters at run time: start vLLM "
                                  "with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True") from None
        except openai.BadRequestError as exc:
            if "already been loaded" not in exc.response.text:  # a loaded adapter is what we wanted
                raise ControllerError(f"the server at {self.base_url} did not load {path}: "
                                      f"{exc.response.text[:500]}") from None
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc) from None
        return OpenAIController(self.base_url, model=name, api_key=self.client.api_key, timeout=self.client.timeout,
                                max_retries=self.client.max_retries)

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        reply = self._call(lambda: self.client.completions.create(
            model=self.model, prompt=prompt + continuation, echo=True, logprobs=0, max_tokens=1, temperature=0))
        scored = reply.choices[0].logprobs
        end = len(prompt) + len(continuation)
        return [lp for offset, lp in zip(scored.text_offset, scored.token_logprobs)
                if len(prompt) <= offset < end and lp is not None]
