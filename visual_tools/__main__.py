"""`python -m visual_tools list [--json]` and `python -m visual_tools fetch CLASS...`."""
from __future__ import annotations

import argparse
import json
import sys

from .checkpoints import fetch
from .registry import TOOL_CLASSES, ToolRegistry, memory_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m visual_tools")
    sub = parser.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="every registered tool, with availability")
    ls.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    ls.add_argument("--load", default=None, help='e.g. "ImageCaptioning_cuda:0,Image2Canny_cpu"')
    fe = sub.add_parser("fetch", help="download the checkpoints of the named tool classes (needs network)")
    fe.add_argument("classes", nargs="+", choices=sorted(TOOL_CLASSES))
    args = parser.parse_args(argv)

    if args.command == "list":
        rows = [tool.schema() for tool in ToolRegistry.from_load(args.load).all()]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for row in rows:
                status = "available" if row["available"] else f"unavailable: {row['reason']}"
                print(f"{row['class']:<24} {row['name']:<52} {memory_text(row):<34} {status}")
        return 0
    for name in args.classes:
        for part in (name, *TOOL_CLASSES[name].requires):  # a ControlNet tool needs its SD base too
            cls = TOOL_CLASSES[part]
            for checkpoint in cls.checkpoints:
                print(f"{part}: {checkpoint} -> {fetch(checkpoint, cls.checkpoint_files)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
