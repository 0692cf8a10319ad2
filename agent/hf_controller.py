"""A transformers causal LM as the controller, with a reused KV cache for the shared prompt prefix."""
from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from transformers import (AutoModelForCausalLM, AutoTokenizer, DynamicCache, LogitsProcessorList,
                          TextIteratorStreamer)

from .chat_format import ChatFormat, encode_prompt, format_prompt, resolve_chat_format
from .controller import Capability, ControllerError, stream_until_stop, truncate_at
from .grammar import Grammar


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def fingerprint(config) -> dict:
    """What must match between a base model and an adapter trained on it."""
    return {key: getattr(config, key, None) for key in ("model_type", "hidden_size", "num_hidden_layers",
                                                         "num_attention_heads", "vocab_size")}


def check_adapter_base(adapter: str, model_id: str, config) -> None:
    """Refuse an adapter trained on another base (its `toolsmith.json` records the base it was trained on)."""
    meta_path = Path(adapter) / "toolsmith.json"
    if not meta_path.is_file():
        return  # an adapter from elsewhere: peft checks the tensor shapes
    meta = json.loads(meta_path.read_text())
    if meta.get("base_fingerprint") and meta["base_fingerprint"] != fingerprint(config):
        raise ControllerError(f"adapter '{adapter}' was trained on {meta.get('base')}, not on {model_id}: "
                              "load it with the base model it was trained on")


class TransformersController:
    """Any causal LM (id or path), optional peft LoRA adapter, optional 8-/4-bit on CUDA.

    `chat_format`: "raw" sends the prompt as is; "vicuna" wraps it as GPT4Tools does
    (`USER: \\n{prompt}ASSISTANT:`); "chat" uses the tokenizer's chat template; "auto" picks
    "chat" when the tokenizer has a template, else "raw".

    Prefix caching: the KV cache of the last sequence is kept; a new prompt reuses it up to the
    longest common token prefix (the fixed GPT4Tools prompt, the history, earlier steps), so each
    agent step only encodes what is new.
    """

    capabilities = Capability.GRAMMAR | Capability.SCORES | Capability.WEIGHTS

    def __init__(self, model, tokenizer, *, chat_format: ChatFormat = "auto", name: str | None = None,
                 prefix_cache: bool = True):
        self.model = model.eval()
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.chat_format = resolve_chat_format(tokenizer, chat_format)
        self.name = name or model.config.name_or_path
        self.prefix_cache = prefix_cache
        self.reused_tokens = self.prompt_tokens = 0  # prefix-cache statistics
        self._cache: DynamicCache | None = None
        self._cache_ids: list[int] = []
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, model_id: str, adapter: str | None = None, *, load_in_8bit: bool = False,
                        load_in_4bit: bool = False, device_map: str | dict | None = None,
                        chat_format: ChatFormat = "auto", name: str | None = None,
                        prefix_cache: bool = True) -> "TransformersController":
        cuda = torch.cuda.is_available()
        quantization = None
        if load_in_8bit or load_in_4bit:
            if not cuda:
                raise ControllerError("8-/4-bit loading needs a CUDA GPU and bitsandbytes "
                                      "(pip install -e '.[gpu]')")
            from transformers import BitsAndBytesConfig
            quantization = BitsAndBytesConfig(load_in_8bit=load_in_8bit, load_in_4bit=load_in_4bit,
                                              bnb_4bit_compute_dtype=torch.float16)
        try:
            tokenizer = AutoTokenizer.from_pretrained(model_id)
            model = AutoModelForCausalLM.from_pretrained(
                model_id, dtype=torch.float16 if cuda else torch.float32,
                device_map=device_map or ("auto" if cuda else None), quantization_config=quantization)
        except (OSError, ValueError) as exc:
            raise ControllerError(f"cannot load controller '{model_id}': {exc}") from None
        if adapter:
            from peft import PeftModel
            check_adapter_base(adapter, model_id, model.config)
            try:
                model = PeftModel.from_pretrained(model, adapter)
            except (OSError, ValueError) as exc:
                raise ControllerError(f"cannot load adapter '{adapter}': {exc}") from None
            except RuntimeError as exc:  # tensor shapes differ: another base model
                raise ControllerError(f"adapter '{adapter}' does not fit {model_id} ({str(exc)[:200]})") from None
            if quantization is None:
                model = model.merge_and_unload()  # as GPT4Tools does: plain weights, full speed
        label = name or (model_id + (f" + {adapter}" if adapter else ""))
        return cls(model, tokenizer, chat_format=chat_format, name=label, prefix_cache=prefix_cache)

    # --- text <-> tokens -----------------------------------------------------------------------
    def format_prompt(self, prompt: str) -> str:
        return format_prompt(self.tokenizer, prompt, self.chat_format)

    def encode_prompt(self, prompt: str) -> list[int]:
        return encode_prompt(self.tokenizer, prompt, self.chat_format)

    def _encode(self, text: str, special: bool = True) -> list[int]:
        return self.tokenizer(text, add_special_tokens=special)["input_ids"]

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    # --- generation ----------------------------------------------------------------------------
    def _prefill(self, ids: list[int]) -> DynamicCache:
        """The kept KV cache extended to cover `ids[:-1]`, reusing the longest common prefix (under the lock)."""
        keep = min(_common_prefix(ids, self._cache_ids), len(ids) - 1) if self.prefix_cache else 0
        if keep > 0 and self._cache is not None:
            self._cache.crop(keep - self._cache.get_seq_length())  # negative: tokens to drop
        else:
            keep, self._cache = 0, DynamicCache(config=self.model.config)
        self._cache_ids = []  # the cache is being extended: trust it again only once this returns
        self.reused_tokens += keep
        if keep < len(ids) - 1:
            self.model(torch.tensor([ids[keep:-1]], device=self.model.device), cache=self._cache)
        self._cache_ids = ids[:-1]
        return self._cache

    def _generate_ids(self, ids: list[int], *, stop: Sequence[str], max_new_tokens: int, temperature: float,
                      n: int = 1, streamer=None, gbnf: str | None = None) -> list[list[int]]:
        """Generate under the lock, reusing (and keeping) the prefix KV cache of the prompt.

        With n > 1 the prompt is encoded once and its cache copied n times: the n samples share one prefill
        (`generate(num_return_sequences=n)` would encode the prompt n times)."""
        kwargs = dict(max_new_tokens=max_new_tokens, streamer=streamer, do_sample=temperature > 0,
                      pad_token_id=self.tokenizer.pad_token_id, return_dict_in_generate=True)
        if temperature > 0:
            kwargs.update(temperature=temperature, top_p=1.0, top_k=0)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if stop:
            kwargs.update(stop_strings=list(stop), tokenizer=self.tokenizer)
        if gbnf is not None and n == 1:
            from . import guidance
            n_vocab = self.model.config.vocab_size
            found = guidance.matcher(gbnf, guidance.hf_tokenizer(self.tokenizer, n_vocab)) if guidance.available() \
                else None
            if found is not None:
                kwargs["logits_processor"] = LogitsProcessorList([guidance.transformers_mask(found, n_vocab, len(ids))])
        input_ids = torch.tensor([ids] * n, device=self.model.device)
        with self._lock, torch.inference_mode():
            self.prompt_tokens += len(ids)
            try:
                cache = self._prefill(ids)
                if n > 1:
                    cache = copy.deepcopy(cache)
                    cache.batch_repeat_interleave(n)
                out = self.model.generate(input_ids, attention_mask=torch.ones_like(input_ids), cache=cache,
                                          **kwargs)
            except torch.OutOfMemoryError:
                self._cache, self._cache_ids = None, []
                raise ControllerError(f"{self.name} ran out of memory on a {len(ids)}-token prompt") from None
            if n == 1 and self.prefix_cache:
                self._cache = out.cache
                self._cache_ids = out.sequences[0, : self._cache.get_seq_length()].tolist()
        return [seq[len(ids):].tolist() for seq in out.sequences]

    def _ids_texts(self, ids: list[int], stop: Sequence[str], max_new_tokens: int, temperature: float,
                   gbnf: str | None) -> Iterator[str]:
        """One reply's text pieces as they are generated (a thread generates, this one reads the streamer)."""
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
        failure: list[BaseException] = []

        def work() -> None:
            try:
                self._generate_ids(ids, stop=stop, max_new_tokens=max_new_tokens, temperature=temperature,
                                   streamer=streamer, gbnf=gbnf)
            except BaseException as exc:  # re-raised in the caller's thread below
                failure.append(exc)
                streamer.end()

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        try:
            yield from streamer
        finally:
            thread.join()
        if failure:
            raise failure[0]

    def _texts(self, prompt: str, stop: Sequence[str], max_new_tokens: int, temperature: float,
               grammar: Grammar | None) -> Iterator[str]:
        """Under the grammar as far as it reaches, then on unconstrained from the cached prefix."""
        ids = self.encode_prompt(prompt)
        head = ""
        for piece in self._ids_texts(ids, stop, max_new_tokens, temperature, grammar.gbnf if grammar else None):
            head += piece
            yield piece
        if grammar is not None and grammar.free_after and head.endswith(grammar.free_after):
            written = self._encode(head, special=False)
            yield from self._ids_texts(ids + written, stop, max_new_tokens - len(written), temperature, None)

    def generate(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
                 temperature: float = 0.0, n: int = 1, grammar: Grammar | None = None) -> list[str]:
        if grammar is not None:
            return [truncate_at("".join(self._texts(prompt, stop, max_new_tokens, temperature, grammar)), stop)
                    for _ in range(n)]
        ids = self.encode_prompt(prompt)
        outs = self._generate_ids(ids, stop=stop, max_new_tokens=max_new_tokens, temperature=temperature, n=n)
        return [truncate_at(self._decode(out), stop) for out in outs]

    def stream(self, prompt: str, *, stop: Sequence[str] = (), max_new_tokens: int = 256,
               temperature: float = 0.0, grammar: Grammar | None = None) -> Iterator[str]:
        yield from stream_until_stop(self._texts(prompt, stop, max_new_tokens, temperature, grammar), stop)

    # --- scoring -------------------------------------------------------------------------------
    def _score(self, ids: list[int]) -> torch.Tensor:
        """log P(ids[i] | ids[:i]) for i >= 1."""
        with self._lock, torch.inference_mode():
            logits = self.model(torch.tensor([ids], device=self.model.device)).logits[0, :-1].float()
        return logits.log_softmax(-1).gather(1, torch.tensor(ids[1:], device=logits.device)[:, None])[:, 0]

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        head = self._encode(prompt)
        if not head:
            if self.tokenizer.bos_token_id is None:
                raise ValueError("logprobs needs a non-empty prompt for a model without a BOS token")
            head = [self.tokenizer.bos_token_id]
        tail = self._encode(continuation, special=False)
        return self._score(head + tail)[len(head) - 1:].tolist() if tail else []

    def token_logprobs(self, text: str) -> tuple[list[str], list[int], list[float | None]]:
        """Tokens of `text`, their character offsets and log-probabilities (None for the first)."""
        enc = self.tokenizer(text, return_offsets_mapping=True)
        ids = enc["input_ids"]
        scores = self._score(ids).tolist() if len(ids) > 1 else []
        tokens = [self.tokenizer.decode([i]) for i in ids]
        return tokens, [start for start, _ in enc["offset_mapping"]], [None, *scores]
