"""ToolACE-R's model-aware iterative training: score the pool with the current model, keep α < D < β, train the
adapter further on the kept samples (each also as a self-refine turn), evaluate, repeat while it improves.

Everything is written to the run folder: `toolace_log.jsonl` (stages, progress, one row per iteration), the
difficulty of every sample per iteration, and `iter-N/adapter` (our LoRA trainer's output).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from agent.controller import Controller
from agent.hf_controller import TransformersController
from agent.openai_controller import OpenAIController
from agent.prompts import STOP

from ..tuning.sft import TrainConfig, base_checkpoint, encode_example, fit, load_tokenizer
from .calls import Style
from .data import Sample
from .difficulty import Scored, reply_alignment, score_samples
from .refine import refine_prompt
from .settings import LOG_FILE, Settings

def stop_strings(style: Style) -> tuple[str, ...]:
    return STOP if style == "gpt4tools" else ()


def sampler(controller: Controller, style: Style, settings: Settings):
    """k replies per prompt in one batched call (one prompt encoding shared by the k draws)."""
    def generate(prompt: str, k: int) -> list[str]:
        return controller.generate(prompt, stop=stop_strings(style), max_new_tokens=settings.max_new_tokens,
                                   temperature=settings.temperature, n=k)
    return generate


def select(samples: list[Sample], scored: list[Scored], settings: Settings) -> list[tuple[Sample, Scored]]:
    return [(s, d) for s, d in zip(samples, scored) if settings.alpha < d.difficulty < settings.beta]


def training_rows(kept: list[tuple[Sample, Scored]], tokenizer, chat_format: str, refine: bool,
                  cutoff: int) -> list[dict]:
    """The sample as is, and (with `refine`) as a second turn after the model's own first answer A1, which is part
    of the masked prompt; a sample whose A1 is already right is kept too (it teaches the model to stop)."""
    rows = []
    for sample, scored in kept:
        rows.append(encode_example(tokenizer, sample.prompt, sample.target, chat_format))
        if refine:
            rows.append(encode_example(tokenizer, refine_prompt(sample.prompt, scored.replies[0]), sample.target,
                                       chat_format))
    return [r for r in rows if len(r["input_ids"]) <= cutoff]


def dev_score(controller: Controller, dev: list[Sample], settings: Settings,
              tools: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Greedy replies on the held-out samples: mean alignment O and the share exactly right, in %."""
    scores = []
    for sample in dev:
        reply = controller.generate(sample.prompt, stop=stop_strings(sample.style),
                                    max_new_tokens=settings.max_new_tokens)[0]
        scores.append(reply_alignment(sample.gold, reply, sample.style, tools))
    return {"score": round(100 * sum(scores) / len(scores), 2),
            "exact": round(100 * sum(s == 1.0 for s in scores) / len(scores), 2)}


def card(meta: dict) -> str:
    return (f"---\nbase_model: {meta['base']}\nlibrary_name: peft\ntags: [lora, toolace-r, function-calling, "
            f"toolsmith]\n---\n\n# Toolsmith ToolACE-R adapter, iteration {meta['iteration']}\n\nTrained with "
            f"`python -m training toolace-r` on {meta['kept']} of {meta['pool']} samples selected by model-aware "
            f"difficulty ({meta['alpha']} < D < {meta['beta']}, k = {meta['k']}), {meta['examples']} examples "
            f"(self-refine turns included: {meta['refine_data']}).\n")


class Run:
    """One selection run writing to its folder."""

    def __init__(self, out: str | Path, base: str, train: TrainConfig, settings: Settings,
                 tools: Mapping[str, Any] | None = None, init_adapter: str | None = None, sampler: str | None = None):
        """`init_adapter`: start from this LoRA adapter (trained on `base`), e.g. a warm-up SFT adapter.
        `sampler`: an OpenAI-compatible URL (`…/v1[#model]`, a vLLM server of the same base) that draws the k
        samples and the held-out answers; each iteration's adapter is loaded there by path (training stays here)."""
        settings.check()
        self.out, self.base, self.train, self.settings, self.tools = Path(out), base, train, settings, tools
        self.init_adapter, self.sampler = init_adapter, sampler
        self.out.mkdir(parents=True, exist_ok=True)

    def log(self, **event) -> None:
        with (self.out / LOG_FILE).open("a") as f:
            f.write(json.dumps({"time": time.time(), **event}) + "\n")

    def _controller(self, adapter: str | None) -> Controller:
        """The model being trained, as training loads it (for `embedded`: the plain SmolLM2, not the GPT4Tools
        adapter the Chat tab adds by default), with the current adapter merged; or the sampler server with it."""
        if self.sampler:
            url, _, model = self.sampler.partition("#")
            remote = OpenAIController(url, model=model or None)
            if not adapter:
                return remote
            path = str(Path(adapter).resolve())  # read by the server
            return remote.with_adapter(f"{self.out.name}-{hashlib.sha256(path.encode()).hexdigest()[:8]}", path)
        source, _ = base_checkpoint(self.base)
        return TransformersController.from_pretrained(source, adapter=adapter, chat_format=self.train.chat_format)

    def run(self, pool: list[Sample], dev: list[Sample]) -> str | None:
        """Iterate; returns the best adapter (the starting one, or None, when no iteration improved on it)."""
        if not pool or not dev:
            raise ValueError("the pool and the held-out set both need samples")
        s = self.settings
        self.log(event="start", pool=len(pool), dev=len(dev), settings=asdict(s), base=self.base,
                 init_adapter=self.init_adapter)
        tokenizer, chat_format = load_tokenizer(self.train)
        adapter = best_adapter = self.init_adapter
        misses = 0
        self.log(event="stage", stage="evaluating", iteration=0)
        best = dev_score(self._controller(adapter), dev, s, self.tools)
        self.log(event="iteration", iteration=0, pool=len(pool), kept=None, mean_difficulty=None, **best,
                 adapter=adapter)
        for iteration in range(1, s.iters + 1):
            started = time.monotonic()
            self.log(event="stage", stage="scoring", iteration=iteration)
            style = pool[0].style
            scored = score_samples(
                sampler(self._controller(adapter), style, s), [p.prompt for p in pool], [p.gold for p in pool], style,
                s.k, self.tools, on_progress=lambda d, t: self.log(event="progress", stage="scoring", done=d, total=t))
            with (self.out / f"difficulty-{iteration}.jsonl").open("w") as f:
                for sample, d in zip(pool, scored):
                    f.write(json.dumps({"id": sample.id, "difficulty": d.difficulty, "replies": d.replies}) + "\n")
            kept = select(pool, scored, s)
            mean_d = round(sum(d.difficulty for d in scored) / len(scored), 4) if scored else 0.0
            if not kept:
                self.log(event="iteration", iteration=iteration, pool=len(pool), kept=0, mean_difficulty=mean_d,
                         score=None, exact=None, adapter=None, seconds=round(time.monotonic() - started, 1))
                self.log(event="stopped", reason=f"no sample has {s.alpha} < D < {s.beta}: nothing to train on")
                break
            rows = training_rows(kept, tokenizer, chat_format, s.refine_data, self.train.cutoff)
            self.log(event="stage", stage="training", iteration=iteration, examples=len(rows))
            config = replace(self.train, out=str(self.out / f"iter-{iteration}"), init_adapter=adapter)
            meta = {"chat_format": chat_format, "iteration": iteration, "pool": len(pool), "kept": len(kept),
                    "alpha": s.alpha, "beta": s.beta, "k": s.k, "refine_data": s.refine_data,
                    "records": len(kept), "data_sha256": hashlib.sha256(
                        json.dumps([[x.id, x.target] for x, _ in kept]).encode()).hexdigest()}
            adapter = str(fit(config, tokenizer, rows, meta, card))
            self.log(event="stage", stage="evaluating", iteration=iteration)
            result = dev_score(self._controller(adapter), dev, s, self.tools)
            self.log(event="iteration", iteration=iteration, pool=len(pool), kept=len(kept), mean_difficulty=mean_d,
                     **result, adapter=adapter, seconds=round(time.monotonic() - started, 1))
            if result["score"] > best["score"]:
                best, best_adapter, misses = result, adapter, 0
                continue
            misses += 1
            if misses > s.patience:
                self.log(event="stopped", reason=f"iteration {iteration} did not improve the dev score "
                                                 f"({result['score']} <= {best['score']})")
                break
        self.log(event="done", best_adapter=best_adapter, best=best)
        return best_adapter
