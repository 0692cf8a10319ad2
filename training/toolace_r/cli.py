"""`python -m training toolace-r ...` (iterative selection) and `python -m training bfcl ...` (BFCL AST accuracy)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent.factory import add_engine_flag
from visual_tools import ToolRegistry, data_home

from .refine import REFINE_MODES, ROUNDS


def add_parsers(sub) -> None:
    t = sub.add_parser("toolace-r", help="ToolACE-R: model-aware difficulty, iterative selection, self-refine data")
    t.add_argument("--data", required=True, help="records JSONL, ToolACE's data.json, or a samples JSONL")
    t.add_argument("--base", default="embedded", help="'embedded' (plain SmolLM2-135M-Instruct), a hub id or a folder")
    t.add_argument("--init-adapter", default=None,
                   help="start from this LoRA adapter of the base (e.g. assets/controller-lora, --format gpt4tools)")
    t.add_argument("--out", default=None, help="the run folder (default: $TOOLSMITH_HOME/toolace-r/<data name>)")
    t.add_argument("--format", default="python", choices=["python", "gpt4tools"],
                   help="how records are rendered: BFCL's function calling, or GPT4Tools' Thought/Action steps")
    t.add_argument("--sampler", default=None,
                   help="an OpenAI-compatible URL (a vLLM server of the same base, runtime LoRA: docs/deploy.md) "
                        "that draws the k samples and dev answers; training stays on this machine")
    t.add_argument("--iters", type=int, default=3)
    t.add_argument("--alpha", type=float, default=0.0, help="keep samples with alpha < D < beta")
    t.add_argument("--beta", type=float, default=0.9)
    t.add_argument("--k", type=int, default=8, help="samples per prompt for the difficulty (paper: 8)")
    t.add_argument("--patience", type=int, default=0,
                   help="iterations in a row without a better held-out score before stopping (0: stop at the first)")
    t.add_argument("--temperature", type=float, default=1.0)
    t.add_argument("--max-new-tokens", type=int, default=96)
    t.add_argument("--limit", type=int, default=0, help="use only the first N samples (0: all)")
    t.add_argument("--dev-fraction", type=float, default=0.1, help="held out for the per-iteration score")
    t.add_argument("--no-refine-data", action="store_true", help="train on the samples only, no self-refine turns")
    t.add_argument("--epochs", type=float, default=3.0)
    t.add_argument("--lr", type=float, default=3e-4)
    t.add_argument("--batch-size", type=int, default=4)
    t.add_argument("--max-steps", type=int, default=-1)
    t.add_argument("--cutoff", type=int, default=2048)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(func=cmd_toolace_r)

    b = sub.add_parser("bfcl", help="BFCL AST accuracy with bfcl-eval's own checker")
    b.add_argument("--category", action="append", help="a BFCL category, repeatable (default: simple_python)")
    b.add_argument("--controller", default="embedded", help="as app.py --controller")
    b.add_argument("--adapter", default=None)
    add_engine_flag(b)
    b.add_argument("--limit", type=int, default=0, help="the first N questions of each category (0: all)")
    b.add_argument("--refine", default="none", choices=REFINE_MODES)
    b.add_argument("--rounds", type=int, default=ROUNDS, help="most refine rounds (paper: 5)")
    b.add_argument("--max-new-tokens", type=int, default=128)
    b.add_argument("--out", default=None, help="a folder for summary.md and replies.jsonl")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bfcl)


def cmd_toolace_r(args: argparse.Namespace) -> None:
    from agent.controller import ControllerError

    from ..tuning.sft import TrainConfig, TrainingError
    from .data import load_samples, save_samples, split
    from .iterate import Run, Settings
    tools = ToolRegistry.from_load().tools
    settings = Settings(iters=args.iters, alpha=args.alpha, beta=args.beta, k=args.k, temperature=args.temperature,
                        max_new_tokens=args.max_new_tokens, refine_data=not args.no_refine_data,
                        patience=args.patience)
    try:
        settings.check()
        loaded = load_samples(args.data, tools, args.format)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None
    for problem in loaded.problems[:20]:
        print(f"warning: {args.data}: {problem}", file=sys.stderr)
    samples = loaded.samples[:args.limit] if args.limit else loaded.samples
    if len(samples) < 2:
        raise SystemExit(f"error: {args.data} gives {len(samples)} samples; need at least 2 (a pool and a dev set)")
    pool, dev = split(samples, args.dev_fraction, args.seed)
    if not pool:
        raise SystemExit("error: nothing left in the pool after holding out the dev set; lower --dev-fraction")
    out = Path(args.out or data_home() / "toolace-r" / Path(args.data).stem)
    save_samples(pool, out / "pool.jsonl")
    save_samples(dev, out / "dev.jsonl")
    train = TrainConfig(data=str(args.data), out=str(out), base=args.base, epochs=args.epochs, learning_rate=args.lr,
                        batch_size=args.batch_size, max_steps=args.max_steps, cutoff=args.cutoff, seed=args.seed)
    print(f"{len(samples)} samples from {args.data} ({loaded.kind}): pool {len(pool)}, dev {len(dev)} -> {out}")
    try:
        best = Run(out, args.base, train, settings, tools, init_adapter=args.init_adapter,
                   sampler=args.sampler).run(pool, dev)
    except (TrainingError, ValueError, ControllerError) as exc:
        raise SystemExit(f"error: {exc}") from None
    print(iteration_table(out))
    print(f"best adapter: {best}" if best else "no iteration improved on the base model")


def iteration_table(out: Path) -> str:
    from .iterate import LOG_FILE
    rows = [json.loads(line) for line in (out / LOG_FILE).read_text().splitlines() if line.strip()]
    lines = ["| iteration | pool | kept | mean D | dev score (mean O, %) | exact (%) |", "|---|---|---|---|---|---|"]
    for r in (r for r in rows if r["event"] == "iteration"):
        lines.append(f"| {r['iteration']} | {r['pool']} | {'–' if r['kept'] is None else r['kept']} | "
                     f"{'–' if r['mean_difficulty'] is None else r['mean_difficulty']} | "
                     f"{'–' if r['score'] is None else r['score']} | {'–' if r['exact'] is None else r['exact']} |")
    stops = [r["reason"] for r in rows if r["event"] == "stopped"]
    return "\n".join(lines) + (f"\n\nstopped: {stops[-1]}" if stops else "")


def cmd_bfcl(args: argparse.Namespace) -> None:
    from agent.controller import ControllerError
    from agent.factory import ControllerSpec, load_controller

    from . import bfcl
    from .refine import SelfRefine
    categories = args.category or ["simple_python"]
    try:
        cases = [case for category in categories for case in bfcl.load_category(category, args.limit)]
        spec = ControllerSpec.parse(args.controller, args.adapter, args.engine)
        controller = SelfRefine(load_controller(spec), args.refine, args.rounds, style="python")
    except (ValueError, ControllerError, bfcl.BFCLUnavailable) as exc:
        raise SystemExit(f"error: {exc}") from None
    outcomes = bfcl.evaluate(lambda prompt: controller.answer(prompt, max_new_tokens=args.max_new_tokens), cases)
    rows = bfcl.summary(outcomes)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.md").write_text(bfcl.markdown(rows) + "\n")
        (out / "replies.jsonl").write_text("".join(json.dumps(o.__dict__) + "\n" for o in outcomes))
    if args.json:
        print(json.dumps({"controller": controller.name, "rows": rows}, indent=1))
    else:
        print(f"{controller.name}, refine {args.refine}\n{bfcl.markdown(rows)}")
