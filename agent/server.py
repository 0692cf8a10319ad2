"""`python -m agent serve`: an OpenAI-compatible endpoint over a local controller (for teachers,
shared GPUs, and the tests of the HTTP backend)."""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

from fastapi import FastAPI, HTTPException
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from .hf_controller import TransformersController


class ChatRequest(BaseModel):
    model: str | None = None
    messages: list[dict]
    max_tokens: int | None = 256
    temperature: float = 0.0
    n: int = 1
    stop: str | list[str] | None = None
    stream: bool = False


class CompletionRequest(BaseModel):
    model: str | None = None
    prompt: str
    max_tokens: int | None = 16
    temperature: float = 0.0
    echo: bool = False
    logprobs: int | None = None


def _stops(stop: str | list[str] | None) -> list[str]:
    return [stop] if isinstance(stop, str) else list(stop or [])


def create_app(controller: TransformersController, model_name: str) -> FastAPI:
    app = FastAPI(title="Toolsmith controller server")

    def envelope(kind: str, choices: list[dict]) -> dict:
        return {"id": f"tsm-{uuid.uuid4().hex[:12]}", "object": kind, "created": int(time.time()),
                "model": model_name, "choices": choices}

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "toolsmith"}]}

    @app.post("/v1/chat/completions")
    def chat(req: ChatRequest):
        # The agent sends one user message holding the whole prompt; several are joined in order.
        prompt = "\n\n".join(str(m.get("content", "")) for m in req.messages)
        params = dict(stop=_stops(req.stop), max_new_tokens=req.max_tokens or 256, temperature=req.temperature)
        if not req.stream:
            texts = controller.generate(prompt, n=req.n, **params)
            return envelope("chat.completion", [
                {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                for i, t in enumerate(texts)])

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
        tokens, offsets, scores = controller.token_logprobs(req.prompt)
        logprobs = {"tokens": tokens, "text_offset": offsets, "token_logprobs": scores, "top_logprobs": None}
        return envelope("text_completion", [{"index": 0, "text": req.prompt, "logprobs": logprobs,
                                             "finish_reason": "length"}])

    return app
