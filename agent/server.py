"""`python -m agent serve`: an OpenAI-compatible endpoint over a local controller (for teachers,
shared GPUs, and the tests of the HTTP backend)."""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator

from fastapi import FastAPI, HTTPException
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel

from .controller import Capability, Controller, ControllerError
from .grammar import Grammar
from .prompts import Prompt


class ChatRequest(BaseModel):
    model: str | None = None
    messages: list[dict]
    max_tokens: int | None = 256
    temperature: float = 0.0
    n: int = 1
    stop: str | list[str] | None = None
    stream: bool = False
    structured_outputs: dict | None = None  # vLLM's field; this server takes {"grammar": GBNF}
    continue_final_message: bool = False  # vLLM's: the last (assistant) message is a reply to continue


class CompletionRequest(BaseModel):
    model: str | None = None
    prompt: str
    max_tokens: int | None = 16
    temperature: float = 0.0
    echo: bool = False
    logprobs: int | None = None


class LoraRequest(BaseModel):
    """vLLM's runtime LoRA endpoints: the same bodies, so one client serves both servers."""
    lora_name: str
    lora_path: str | None = None


def _stops(stop: str | list[str] | None) -> list[str]:
    return [stop] if isinstance(stop, str) else list(stop or [])


def create_app(controller: Controller, model_name: str,
               load_adapter: Callable[[str], Controller] | None = None) -> FastAPI:
    """`load_adapter(path)`: the base with a LoRA adapter on top, for vLLM's `/v1/load_lora_adapter`
    (the adapter is then asked for by its `lora_name` as the model)."""
    app = FastAPI(title="Toolsmith controller server")
    adapters: dict[str, Controller] = {}
    lock = threading.Lock()

    def envelope(kind: str, choices: list[dict], model: str = model_name) -> dict:
        return {"id": f"tsm-{uuid.uuid4().hex[:12]}", "object": kind, "created": int(time.time()),
                "model": model, "choices": choices}

    def pick(model: str | None) -> Controller:
        if model in (None, model_name):
            return controller
        if model in adapters:
            return adapters[model]
        raise HTTPException(404, f"The model `{model}` does not exist.")

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "toolsmith"}
                                           for name in (model_name, *adapters)]}

    @app.post("/v1/load_lora_adapter", response_class=PlainTextResponse)
    def load_lora(req: LoraRequest) -> str:
        if load_adapter is None:
            raise HTTPException(400, "this server was started without adapter loading")
        if not req.lora_path:
            raise HTTPException(400, "lora_path is required")
        with lock:
            if req.lora_name in adapters or req.lora_name == model_name:
                raise HTTPException(400, f"The lora adapter '{req.lora_name}' has already been loaded.")
            try:
                adapters[req.lora_name] = load_adapter(req.lora_path)
            except ControllerError as exc:
                raise HTTPException(400, str(exc)) from None
        return f"Success: LoRA adapter '{req.lora_name}' added successfully."

    @app.post("/v1/unload_lora_adapter", response_class=PlainTextResponse)
    def unload_lora(req: LoraRequest) -> str:
        with lock:
            if adapters.pop(req.lora_name, None) is None:
                raise HTTPException(404, f"The lora adapter '{req.lora_name}' cannot be found.")
        return f"Success: LoRA adapter '{req.lora_name}' removed successfully."

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest):
        controller = pick(req.model)
        # The agent sends one user message holding the whole prompt (several are joined in order), and for the
        # compact template the reply so far as an assistant message to continue.
        texts = [str(m.get("content", "")) for m in req.messages]
        reply = texts.pop() if req.continue_final_message and len(texts) > 1 else ""
        prompt = Prompt("\n\n".join(texts), reply)
        params = dict(stop=_stops(req.stop), max_new_tokens=req.max_tokens or 256, temperature=req.temperature)
        if req.structured_outputs is not None:
            if set(req.structured_outputs) != {"grammar"} or not isinstance(req.structured_outputs["grammar"], str):
                raise HTTPException(400, "this server takes only structured_outputs={'grammar': <GBNF>}")
            params["grammar"] = Grammar(req.structured_outputs["grammar"], free_after=None)
        if not req.stream:
            texts = controller.generate(prompt, n=req.n, **params)
            return envelope("chat.completion", [
                {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                for i, t in enumerate(texts)], req.model or model_name)

        def events() -> Iterator[str]:
            for piece in controller.stream(prompt, **params):
                yield "data: " + json.dumps(envelope("chat.completion.chunk", [
                    {"index": 0, "delta": {"content": piece}, "finish_reason": None}])) + "\n\n"
            yield "data: " + json.dumps(envelope("chat.completion.chunk", [
                {"index": 0, "delta": {}, "finish_reason": "stop"}])) + "\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/v1/completions")
    def completions(req: CompletionRequest) -> dict:
        """Scoring only (what `OpenAIController.logprobs` asks of vLLM): echo=true with logprobs."""
        if not (req.echo and req.logprobs is not None):
            raise HTTPException(400, "this server scores prompts on /v1/completions (echo=true, logprobs=0); "
                                     "generate through /v1/chat/completions")
        scorer = pick(req.model)
        if Capability.SCORES not in scorer.capabilities:
            raise HTTPException(400, f"{scorer.name} does not score tokens (llama.cpp generates only); serve a "
                                     "transformers controller (--controller <folder or hub id>) for logprobs")
        tokens, offsets, scores = scorer.token_logprobs(req.prompt)
        logprobs = {"tokens": tokens, "text_offset": offsets, "token_logprobs": scores, "top_logprobs": None}
        return envelope("text_completion", [{"index": 0, "text": req.prompt, "logprobs": logprobs,
                                             "finish_reason": "length"}])

    return app
