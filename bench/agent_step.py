"""Latency of a 3-step agent episode on the embedded controller: prefix-cached vs re-encoding each step.

GPT4Tools/TaskMatrix re-encode the whole prompt at every step; Toolsmith keeps the KV cache of the
last sequence and encodes only the new tail. Both modes share the same weights and see the same
prompts; each step generates a fixed token budget (no early stop) so both do the same decoding work.
Run: python bench/agent_step.py [--steps 3] [--new-tokens 32] [--history-turns 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.embedded import load_embedded  # noqa: E402
from agent.hf_controller import TransformersController  # noqa: E402
from agent.prompts import ScratchStep, Turn, image_turn, render_prompt, render_step  # noqa: E402
from visual_tools import ToolRegistry  # noqa: E402


def episode_prompts(steps: int, history_turns: int) -> tuple[str, list[str]]:
    """The previous turn's prompt (what a chat in progress has cached), then this turn's step prompts."""
    tools = ToolRegistry.from_load(None).all()  # every registered tool, as a GPU machine offers them
    history = [image_turn("image/1a2b3c4d.png", "a white box on a black table")]
    history += [Turn(f"What is in image/1a2b3c4d.png, part {i}?", f"It shows a white box, detail {i}.")
                for i in range(history_turns)]
    previous = render_prompt(tools, history[:-1], history[-1].human)
    done: list[ScratchStep] = []
    prompts = []
    for i in range(steps):
        prompts.append(render_prompt(tools, history, "Detect the edges, then describe them.", done))
        done.append(ScratchStep(render_step("Do I need to use a tool? Yes", "Edge Detection On Image",
                                            "image/1a2b3c4d.png"), f"image/{i:08x}_edge_1a2b3c4d_1a2b3c4d.png"))
    return previous, prompts


def run(controller: TransformersController, prompts: list[str], new_tokens: int) -> list[float]:
    times = []
    for prompt in prompts:
        start = time.perf_counter()
        controller.generate(prompt, max_new_tokens=new_tokens)
        times.append(time.perf_counter() - start)
    return times


def measure(base: TransformersController, previous: str, prompts: list[str], budget: int,
            repeats: int) -> dict[bool, list[float]]:
    """Median per-step seconds, re-encoding (False) and prefix-cached (True), over `repeats` episodes."""
    def fresh(cache: bool) -> TransformersController:
        controller = TransformersController(base.model, base.tokenizer, chat_format="chat", prefix_cache=cache)
        if cache:  # a chat in progress: the previous turn left its prompt in the cache
            controller.generate(previous, max_new_tokens=1)
        return controller

    medians = {}
    for cache in (False, True):
        runs = [run(fresh(cache), prompts, budget) for _ in range(repeats)]
        medians[cache] = [statistics.median(r[i] for r in runs) for i in range(len(prompts))]
    return medians


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=32, help="tokens per step (a GPT4Tools step is ~30)")
    parser.add_argument("--history-turns", type=int, nargs="+", default=[3, 30],
                        help="earlier chat turns in the prompt, one scenario each")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    base = load_embedded()
    print(f"controller: {base.name}; {args.steps}-step episodes; median of {args.repeats} runs\n")
    print("| history turns | prompt tokens per step | measure | re-encode (s) | prefix cache (s) | speed-up |")
    print("|---|---|---|---|---|---|")
    for turns in args.history_turns:
        previous, prompts = episode_prompts(args.steps, turns)
        sizes = "/".join(str(len(base._encode(base.format_prompt(p), special=False))) for p in prompts)
        for label, budget in (("time to first token", 1), (f"{args.new_tokens}-token steps", args.new_tokens)):
            times = measure(base, previous, prompts, budget, args.repeats)
            slow, fast = sum(times[False]), sum(times[True])
            print(f"| {turns} | {sizes} | {label} | {slow:.2f} | {fast:.2f} | **{slow / fast:.1f}x** |", flush=True)


if __name__ == "__main__":
    main()
