"""Turn time against the conversation's length: turns 1, 5 and 10 of one scripted ten-turn chat (an upload, then
the requests below) on the default engine with the shipped adapter, as the Chat runs it (shortlist, grammar,
history window), repeated; the median seconds per turn and the prompt's characters at its first step.

    python bench/turn_time.py [--repeats 3] [--out bench/turn_time.md]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.embedded import ADAPTER_DIR  # noqa: E402
from agent.factory import ControllerSpec, add_engine_flag, load_controller  # noqa: E402
from agent.loop import Agent  # noqa: E402
from agent.session import ChatSession  # noqa: E402
from agent.shortlist import DEFAULT_K, SHIPPED_RETRIEVER, load_shortlist  # noqa: E402
from visual_tools import ToolRegistry  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REQUESTS = ("Detect the edges of this image.", "now turn the photo into a sketch", "What is 17 * 23?",
            "thanks!", "what weekday is 2027-03-14?", "find the faces in the photo",
            "crop the left half of the photo", "what's 120 divided by 8?", "detect the straight lines", "ok bye")
SHOWN = (1, 5, 10)


class Measured:
    """The controller, recording the length of the first prompt of each turn."""

    def __init__(self, controller):
        self.controller, self.first_prompts = controller, []
        self.name, self.capabilities = controller.name, controller.capabilities

    def stream(self, prompt, **kwargs):
        self.first_prompts.append(len(prompt))
        return self.controller.stream(prompt, **kwargs)

    def __getattr__(self, name):
        return getattr(self.controller, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    add_engine_flag(parser)
    args = parser.parse_args()
    registry = ToolRegistry.from_load(None)
    spec = ControllerSpec("embedded", adapter=str(ADAPTER_DIR), engine=args.engine)
    controller = Measured(load_controller(spec))
    shortlist, _ = load_shortlist(DEFAULT_K, SHIPPED_RETRIEVER, registry.all())
    agent = Agent(controller, registry, shortlist=shortlist, template=spec.template)
    seconds: dict[int, list[float]] = {n: [] for n in range(1, len(REQUESTS) + 1)}
    chars: dict[int, int] = {}
    for _ in range(args.repeats + 1):  # the first pass warms the caches up and is not counted
        session = ChatSession()
        session.add_image(ROOT / "assets" / "chelsea.png", registry)
        for number, request in enumerate(REQUESTS, 1):
            controller.first_prompts.clear()
            started = time.perf_counter()
            for _ in session.send(agent, request):
                pass
            seconds[number].append(time.perf_counter() - started)
            chars[number] = controller.first_prompts[0] if controller.first_prompts else 0
    median = {n: statistics.median(v[1:]) for n, v in seconds.items()}
    lines = [f"{controller.name}, {args.repeats} repeats (median), history window {agent.history_turns}", "",
             "| turn | seconds | × turn 1 | first prompt (characters) |", "|---|---|---|---|"]
    lines += [f"| {n} | {median[n]:.2f} | {median[n] / median[1]:.2f} | {chars[n]} |" for n in SHOWN]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
