"""The multi-turn set (assets/eval/conversations/multiturn.jsonl, 30 conversations written blind) through the chat's
own session and agent: SR and strict success per turn number and per kind, repeated answers, requests for absent
tools, for one or more history windows, in one run (shortlist and grammar on, as the Chat runs).

    python bench/multiturn.py [--adapter assets/controller-lora] [--history-turns 6,2] [--limit N] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.embedded import ADAPTER_DIR  # noqa: E402
from agent.factory import ControllerSpec, add_engine_flag, load_controller  # noqa: E402
from agent.loop import Agent  # noqa: E402
from agent.shortlist import DEFAULT_K, load_shortlist, retriever_folder  # noqa: E402
from training.evaluation.conversations import (CONVERSATIONS, evaluate_conversations, load_conversations,  # noqa: E402
                                               summary)
from visual_tools import ToolRegistry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", default=str(ADAPTER_DIR))
    parser.add_argument("--data", type=Path, default=CONVERSATIONS)
    parser.add_argument("--history-turns", default="6", help="comma-separated windows, one table each")
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--out", type=Path)
    add_engine_flag(parser)
    args = parser.parse_args()
    registry = ToolRegistry.from_load(None)
    spec = ControllerSpec("embedded", adapter=args.adapter, engine=args.engine)
    controller = load_controller(spec)
    shortlist, note = load_shortlist(DEFAULT_K, retriever_folder(args.adapter), registry.all())
    if note:
        print(f"warning: {note}", file=sys.stderr)
    conversations = load_conversations(args.data)[:args.limit or None]
    for window in map(int, args.history_turns.split(",")):
        results = evaluate_conversations(conversations, lambda: Agent(
            controller, registry, history_turns=window, shortlist=shortlist, template=spec.template), registry)
        table = f"## history window {window} ({controller.name})\n\n{summary(results)}\n"
        print(table)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"window-{window}.md").write_text(table)
            (args.out / f"window-{window}.jsonl").write_text("".join(json.dumps(asdict(r)) + "\n" for r in results))


if __name__ == "__main__":
    main()
