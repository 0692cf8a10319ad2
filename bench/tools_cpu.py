"""Latency of every offline tool on a 512 px photo (median of several runs), against Canny as baseline.

Run: python bench/tools_cpu.py [--runs 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from visual_tools import ImageStore, ToolRegistry, invoke  # noqa: E402

ARGS = {"Crop Image": ", [64, 64, 320, 320]"}  # inputs after the image, where a tool takes more


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--image", default=str(ROOT / "assets" / "astronaut.png"))
    args = parser.parse_args()
    store = ImageStore.new_session()
    name = store.save_upload(args.image)
    tools = [t for t in ToolRegistry.from_load(None).available() if [i.type for i in t.inputs][:1] == ["image_path"]]
    rows = []
    for tool in tools:
        action = name + ARGS.get(tool.name, "")
        start = time.perf_counter()
        invoke(tool, action, store)  # first call: loads the tool
        first = time.perf_counter() - start
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            invoke(tool, action, store)
            times.append(time.perf_counter() - start)
        rows.append((tool.name, tool.backend, first, statistics.median(times)))
    store.delete()
    baseline = next(r[3] for r in rows if r[0] == "Edge Detection On Image")
    print(f"image: {Path(args.image).name} stored at 512x512; median of {args.runs} runs after a first call\n")
    print("| tool | backend | first call (ms) | median (ms) | vs Canny |")
    print("|---|---|---|---|---|")
    for tool, backend, first, median in rows:
        print(f"| {tool} | {backend} | {first * 1000:.0f} | {median * 1000:.1f} | {median / baseline:.1f}x |")


if __name__ == "__main__":
    main()
