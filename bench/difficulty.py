"""ToolACE-R's model-aware difficulty: wall time to score N samples with k draws each, three ways, same run.

- per-draw loop, no cache: k separate `generate` calls per sample, each encoding the prompt again (the naive way);
- per-draw loop, prefix cache: the same k calls, our controller reusing the prompt's KV cache between them;
- batched: one call per sample, the prompt encoded once and its cache copied to k rows decoded together.

Samples: our generated records (`python -m training generate`), as function-calling prompts. Prints a table and
the ratios; the difficulties are seeded draws, so the three ways' mean D differ only by sampling noise.

    python bench/difficulty.py [--data records.jsonl] [--samples 64] [--k 8] [--max-new-tokens 32]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from agent.hf_controller import TransformersController  # noqa: E402
from training.tuning.sft import base_checkpoint  # noqa: E402
from training.toolace_r.data import load_samples  # noqa: E402
from training.toolace_r.difficulty import score_samples  # noqa: E402
from visual_tools import ToolRegistry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="records JSONL (default: 300 generated offline, 2 tools each)")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()
    data = args.data
    if data is None:
        data = str(Path(tempfile.mkdtemp()) / "records.jsonl")
        subprocess.run([sys.executable, "-m", "training", "generate", "--n", "300", "--offer", "2", "--out", data],
                       check=True, capture_output=True)
    samples = load_samples(data, ToolRegistry.from_load().tools).samples[:args.samples]
    prompts, golds = [s.prompt for s in samples], [s.gold for s in samples]
    source, _ = base_checkpoint(args.model)  # the model as the selection loop loads it
    cached = TransformersController.from_pretrained(source)
    plain = TransformersController.from_pretrained(source, prefix_cache=False)
    options = dict(temperature=1.0, max_new_tokens=args.max_new_tokens)
    ways = {
        "per-draw loop, no cache": lambda p, k: [plain.generate(p, **options)[0] for _ in range(k)],
        "per-draw loop, prefix cache": lambda p, k: [cached.generate(p, **options)[0] for _ in range(k)],
        "batched (one prefill, k rows)": lambda p, k: cached.generate(p, n=k, **options),
    }
    cached.generate(prompts[0], n=2, **options)  # warm-up
    results = {}
    for name, generate in ways.items():
        torch.manual_seed(0)
        start = time.perf_counter()
        scored = score_samples(generate, prompts, golds, "python", args.k)
        results[name] = (time.perf_counter() - start, sum(s.difficulty for s in scored) / len(scored))
    print(f"{len(samples)} samples x k = {args.k}, {args.max_new_tokens} new tokens at most, {cached.name}, "
          f"{torch.get_num_threads()} threads\n")
    print("| way | seconds | samples / s | mean D |\n|---|---|---|---|")
    for name, (seconds, mean_d) in results.items():
        print(f"| {name} | {seconds:.1f} | {len(samples) / seconds:.2f} | {mean_d:.3f} |")
    batched = results["batched (one prefill, k rows)"][0]
    print(f"\nbatched vs per-draw loop without cache: {results['per-draw loop, no cache'][0] / batched:.2f}x; "
          f"vs per-draw loop with the prefix cache: {results['per-draw loop, prefix cache'][0] / batched:.2f}x")


if __name__ == "__main__":
    main()
