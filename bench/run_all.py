"""Run every benchmark, one after another (never two torch processes on the same cores), and write one
Markdown file: a summary table of each benchmark's headline against its target, then each one's own table.

    python bench/run_all.py [--quick] [--out bench/RESULTS.md] [--only tools_cpu agent_step ...]

`--quick` passes smaller sizes (minutes, not an hour, on 2 CPU cores); the ratios are measured in the same
run either way, only their noise grows.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Bench:
    script: str
    measures: str
    target: str
    headline: str  # a regex on the output whose first group is the headline figure
    quick: tuple[str, ...] = ()


def _slowest_opencv(output: str) -> str:
    """tools_cpu: the slowest median among the OpenCV tools (the issue's < 200 ms target)."""
    medians = [float(m) for m in re.findall(r"^\|[^|]+\| OpenCV[^|]*\|[^|]+\| ([\d.]+) \|", output, re.M)]
    return f"{max(medians):.1f} ms" if medians else "–"


BENCHES = (
    Bench("tools_cpu.py", "offline tools on a 512 px photo: slowest OpenCV tool's median", "< 200 ms", "",
          ("--runs", "3")),
    Bench("agent_step.py", "embedded controller decode tokens/s: llama.cpp vs fp32 transformers", ">= 3x",
          r"^\| decode tokens/s \|.*\*\*([\d.]+)x\*\*", ("--repeats", "1")),
    Bench("train_throughput.py", "LoRA tokens/s: length-grouped batches vs padded Trainer", ">= 1x",
          r"speed-up: ([\d.]+)x", ("--examples", "12", "--repeats", "1")),
    Bench("toolformer_filter.py", "Toolformer filter: batched vs one forward per candidate", ">= 3x",
          r"speed-up: ([\d.]+)x", ("--repeats", "1")),
    Bench("difficulty.py", "ToolACE-R difficulty, k draws: batched vs per-draw loop", ">= 3x",
          r"without cache: ([\d.]+)x", ("--samples", "4", "--k", "4")),
)


def headline(bench: Bench, output: str) -> str:
    if bench.script == "tools_cpu.py":
        return _slowest_opencv(output)
    found = re.findall(bench.headline, output, re.M)
    return f"{found[-1]}x" if found else "–"


def run(bench: Bench, quick: bool) -> tuple[str, float, int]:
    """The benchmark's output, wall seconds and exit status."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE / bench.script), *(bench.quick if quick else ())],
                          capture_output=True, text=True, cwd=HERE.parent, env=os.environ.copy())
    output = done.stdout + (f"\n{done.stderr[-2000:]}" if done.returncode else "")
    return output, time.perf_counter() - start, done.returncode


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes for a run of minutes")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--only", nargs="+", choices=[b.script.removesuffix(".py") for b in BENCHES])
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHES if not args.only or b.script.removesuffix(".py") in args.only]
    rows, sections = [], []
    for bench in chosen:
        print(f"running {bench.script} ...", flush=True)
        output, seconds, code = run(bench, args.quick)
        figure = headline(bench, output) if code == 0 else f"failed (exit {code})"
        rows.append(f"| `{bench.script}` | {bench.measures} | **{figure}** | {bench.target} | {seconds:.0f} |")
        sections.append(f"## `bench/{bench.script}`\n\n{output.strip()}\n")
    header = (f"# Benchmarks\n\n{platform.node()}: {os.cpu_count()} CPU cores, Python {platform.python_version()}; "
              f"{'quick sizes' if args.quick else 'full sizes'}; {time.strftime('%Y-%m-%d %H:%M')}\n\n"
              "| benchmark | measures | result | target | seconds |\n|---|---|---|---|---|\n")
    args.out.write_text(header + "\n".join(rows) + "\n\n" + "\n".join(sections))
    print(f"\nwrote {args.out}\n\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
