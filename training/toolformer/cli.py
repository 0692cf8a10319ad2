"""`python -m training toolformer corpus|annotate|train|generate|evaluate|run`."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .prompts import PROMPTS, SETTINGS

LOG_FILE = "toolformer_log.jsonl"  # the pipeline's stages and progress, read by the Train tab


def _tools(names: list[str]) -> dict:
    from visual_tools import ToolRegistry
    registry = ToolRegistry.from_load(",".join(f"{name}_cpu" for name in names))
    tools = {}
    for name in names:
        tool = registry.by_class(name)
        ok, reason = tool.availability()
        if not ok:
            raise SystemExit(f"error: {name} is unavailable: {reason}")
        tools[tool.name] = tool
    return tools


def _lm(args: argparse.Namespace):
    from agent.controller import ControllerError
    from .lm import load_lm
    try:
        return load_lm(args.model, getattr(args, "adapter", None))
    except (ControllerError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None


class Log:
    """JSON lines in the run folder (or nowhere): stage, progress, results."""

    def __init__(self, path: Path | None):
        self.path = path

    def __call__(self, **entry) -> None:
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as out:
                out.write(json.dumps({"time": time.time(), **entry}, ensure_ascii=False) + "\n")


def do_annotate(args: argparse.Namespace, log: Log = Log(None)) -> Path:
    from visual_tools.text_tools import read_rows
    from .annotate import annotate, merge
    from .corpus import write_jsonl
    from .prompts import Settings
    try:
        rows = read_rows(args.corpus)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None
    rows = rows[: args.limit] if args.limit else rows
    if not rows:
        raise SystemExit(f"error: the corpus {args.corpus} holds no texts")
    tools, lm = _tools(args.tool), _lm(args)
    settings = {}
    for name in tools:
        paper = SETTINGS[name]
        settings[name] = Settings(paper.tau_s if args.tau_s is None else args.tau_s,
                                  args.positions or paper.positions, args.samples or paper.samples,
                                  paper.tau_f if args.tau_f is None else args.tau_f)
    log(event="stage", stage="annotate", texts=len(rows), settings={k: vars(v) for k, v in settings.items()})
    started = time.monotonic()
    cands, report = annotate(rows, tools, lm.model, lm.tokenizer, settings=settings, batch_size=args.filter_batch,
                             seed=args.seed, on_progress=lambda done, total: log(event="progress", stage="annotate",
                                                                                 done=done, total=total))
    out = Path(args.out)
    write_jsonl(out, merge(rows, cands, lm.tokenizer))
    log_path = out.with_suffix(".candidates.jsonl")
    write_jsonl(log_path, (c.row() for c in cands))
    table = report.markdown() + f"\n\n{time.monotonic() - started:.0f} s on {lm.name}"
    out.with_suffix(".report.md").write_text(table + "\n")
    log(event="annotated", report=table, cstar=str(out), candidates=str(log_path))
    print(f"{table}\n\nC*: {out}\ncandidates: {log_path}")
    return out


def do_train(args: argparse.Namespace) -> Path:
    from ..tuning.sft import TrainConfig, TrainingError
    from .finetune import finetune
    config = TrainConfig(data=args.data, out=args.out, base=args.model, epochs=args.epochs, learning_rate=args.lr,
                         lora_r=args.lora_r, lora_alpha=args.lora_alpha, batch_size=args.batch_size,
                         max_steps=args.max_steps, cutoff=args.cutoff, seed=args.seed, save_steps=10 ** 6)
    try:
        adapter = finetune(config, calls_only=args.calls_only)
    except TrainingError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"adapter saved to {adapter}")
    return adapter


def do_evaluate(args: argparse.Namespace, log: Log = Log(None), label: str = "") -> dict:
    from .evaluate import load_math, markdown, math_eval, perplexity
    from visual_tools.text_tools import read_texts
    lm = _lm(args)
    tools = _tools(args.tool)
    problems = load_math(args.math, args.limit)
    ks = [int(k) for k in str(args.k).split(",")]
    log(event="stage", stage="evaluate", problems=len(problems), ks=ks)
    rows, details = math_eval(lm.model, lm.tokenizer, tools, problems, ks, on_progress=lambda done, total: log(
        event="progress", stage="evaluate", done=done, total=total))
    result = {"model": lm.name, "math": str(args.math), "rows": rows}
    if args.ppl:
        result["perplexity"] = round(perplexity(lm.model, lm.tokenizer, read_texts(args.ppl)), 3)
        result["perplexity_on"] = str(args.ppl)
    table = markdown(rows) + (f"\n\nperplexity on {Path(args.ppl).name} (calls disabled): {result['perplexity']}"
                              if args.ppl else "")
    log(event="evaluated", label=label, report=table, result=result)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({**result, "details": details}, indent=1, ensure_ascii=False))
    print(f"{lm.name} on {Path(args.math).name}\n{table}")
    return result


def do_generate(args: argparse.Namespace) -> None:
    from .decode import generate_with_calls
    lm = _lm(args)
    out = generate_with_calls(lm.model, lm.tokenizer, args.prompt, _tools(args.tool), k=args.k,
                              max_new_tokens=args.max_new_tokens, stop=())
    print(json.dumps({"text": out.text, "calls": [vars(c) for c in out.calls], "notes": out.notes},
                     indent=1, ensure_ascii=False))


def do_run(args: argparse.Namespace) -> None:
    """The whole pipeline in one run folder: annotate -> fine-tune -> evaluate (the Train tab starts this)."""
    from ..tuning.run_files import ADAPTER_DIR
    run = Path(args.out)
    run.mkdir(parents=True, exist_ok=True)
    log = Log(run / LOG_FILE)
    cstar = do_annotate(replace_ns(args, out=str(run / "cstar.jsonl"), adapter=None), log)
    log(event="stage", stage="train")
    do_train(replace_ns(args, data=str(cstar), out=str(run)))
    for stage, adapter in (("base", None), ("tuned", str(run / ADAPTER_DIR))):
        log(event="stage", stage="evaluate", model=stage)
        do_evaluate(replace_ns(args, adapter=adapter, limit=args.eval_limit, out=str(run / f"eval_{stage}.json")), log,
                    stage)
    log(event="done")


def replace_ns(args: argparse.Namespace, **changes) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), **changes})


def add_parser(sub) -> None:
    tf = sub.add_parser("toolformer", help="Toolformer: annotate a corpus with calls, fine-tune, decode, evaluate")
    tsub = tf.add_subparsers(dest="toolformer_command", required=True)

    def model_args(p, adapter: bool = True):
        p.add_argument("--model", default="embedded", help="'embedded' (SmolLM2-135M), a hub id or a folder")
        if adapter:
            p.add_argument("--adapter", default=None, help="a LoRA adapter folder (from `toolformer train`)")

    def tool_args(p, default: list[str]):
        p.add_argument("--tool", action="append", choices=sorted(PROMPTS), default=None,
                       help=f"a text tool (repeatable; default: {', '.join(default)})")
        p.set_defaults(default_tools=default)

    def annotate_args(p):
        p.add_argument("--corpus", required=True, help="JSONL ({text, date?} per line), a .txt or a folder")
        p.add_argument("--limit", type=int, default=0, help="only the first N texts")
        p.add_argument("--positions", type=int, default=0, help="k: positions kept per text (0: the paper's)")
        p.add_argument("--samples", type=int, default=0, help="m: calls sampled per position (0: the paper's)")
        p.add_argument("--tau-s", type=float, default=None, help="position threshold (default: the paper's)")
        p.add_argument("--tau-f", type=float, default=None, help="filter threshold (default: the paper's)")
        p.add_argument("--filter-batch", type=int, default=32, help="sequences per forward pass of the filter")
        p.add_argument("--seed", type=int, default=0)

    def train_args(p):
        p.add_argument("--epochs", type=float, default=3.0)
        p.add_argument("--lr", type=float, default=3e-4, help="LoRA learning rate (the paper: 1e-5, full tuning)")
        p.add_argument("--lora-r", type=int, default=16)
        p.add_argument("--lora-alpha", type=int, default=16)
        p.add_argument("--batch-size", type=int, default=8)
        p.add_argument("--max-steps", type=int, default=-1)
        p.add_argument("--cutoff", type=int, default=1024)
        p.add_argument("--calls-only", action="store_true", help="train only on the texts that got calls")

    def eval_args(p):
        from .corpus import SVAMP
        p.add_argument("--math", default=str(SVAMP),
                       help="SVAMP-style JSON or a JSONL of {question, answer}")
        p.add_argument("--k", default="0,1,3,10", help="call-trigger top-k values (0: calls disabled)")
        p.add_argument("--ppl", default=None, help="held-out texts for perplexity with calls disabled")

    corpus = tsub.add_parser("corpus", help="write the synthetic Calculator/Calendar corpus (labelled synthetic)")
    corpus.add_argument("--n", type=int, default=300)
    corpus.add_argument("--seed", type=int, default=0)
    corpus.add_argument("--cloze", action="store_true",
                        help="write held-out cloze problems instead: Calculator texts cut before their last number "
                             "(for `evaluate --math`)")
    corpus.add_argument("--out", required=True)
    corpus.set_defaults(func=lambda a: print(f"{_write_corpus(a)} rows written to {a.out}"))

    an = tsub.add_parser("annotate", help="sample, execute and filter calls; write C* and the candidate log")
    model_args(an)
    tool_args(an, ["Calculator"])
    annotate_args(an)
    an.add_argument("--out", required=True, help="C* JSONL (beside it: .candidates.jsonl and .report.md)")
    an.set_defaults(func=do_annotate)

    tr = tsub.add_parser("train", help="LoRA fine-tuning on C* (language-modelling loss)")
    model_args(tr, adapter=False)
    tr.add_argument("--data", required=True, help="C* JSONL from `annotate`")
    tr.add_argument("--out", required=True, help="the run folder (adapter/ inside)")
    tr.add_argument("--seed", type=int, default=0)
    train_args(tr)
    tr.set_defaults(func=do_train)

    ge = tsub.add_parser("generate", help="decode one prompt with top-k call triggering")
    model_args(ge)
    tool_args(ge, ["Calculator", "Calendar", "WikiSearch"])
    ge.add_argument("--prompt", required=True)
    ge.add_argument("--k", type=int, default=10)
    ge.add_argument("--max-new-tokens", type=int, default=64)
    ge.set_defaults(func=do_generate)

    ev = tsub.add_parser("evaluate", help="math accuracy for each k, perplexity with calls disabled")
    model_args(ev)
    tool_args(ev, ["Calculator"])
    eval_args(ev)
    ev.add_argument("--limit", type=int, default=0, help="only the first N problems")
    ev.add_argument("--out", default=None, help="a JSON report with every output")
    ev.set_defaults(func=do_evaluate)

    run = tsub.add_parser("run", help="annotate -> train -> evaluate (base and tuned) in one run folder")
    model_args(run, adapter=False)
    tool_args(run, ["Calculator", "Calendar"])
    annotate_args(run)
    train_args(run)
    eval_args(run)
    run.add_argument("--eval-limit", type=int, default=50, help="math problems evaluated")
    run.add_argument("--out", required=True, help="the run folder")
    run.set_defaults(func=do_run)


def _write_corpus(args: argparse.Namespace) -> int:
    from .corpus import write_jsonl
    from .corpus import cloze, make_corpus
    rows = make_corpus(args.n, args.seed)
    return write_jsonl(Path(args.out), cloze(rows) if args.cloze else rows)


def main(args: argparse.Namespace) -> None:
    if getattr(args, "tool", "absent") is None:
        args.tool = args.default_tools
    try:
        args.func(args)
    except KeyboardInterrupt:
        sys.exit(130)
