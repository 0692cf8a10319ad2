"""`python -m training generate|import|export|split|review`: the data pipeline from the shell."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from visual_tools import ToolRegistry, data_home


def _registry(spec: str | None) -> ToolRegistry:
    try:
        return ToolRegistry.from_load(spec or None)
    except ValueError as exc:
        raise SystemExit(f"error: --tools: {exc}") from None


def _load(path: str):
    from .records import load_jsonl
    try:
        report = load_jsonl(path)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {exc}") from None
    for error in report.errors:
        print(f"warning: {path}: {error}", file=sys.stderr)
    return report.records


def cmd_generate(args: argparse.Namespace) -> None:
    from .generate import build_dataset
    from .teachers import load_teacher
    registry = _registry(args.tools)
    teacher = load_teacher(args.teacher, rpm=args.rpm, timeout=args.timeout, retries=args.retries)
    try:
        report = build_dataset(Path(args.images), teacher, registry, Path(args.out), n=args.n, per_call=args.per_call,
                               offer=args.offer, seed=args.seed, augment_data=not args.no_augment)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None
    print(report.markdown())
    for line in report.generation.skipped_files + report.generation.jobs_failed:
        print(f"  {line}", file=sys.stderr)
    if args.review:
        from .review_store import ReviewStore
        from .records import load_jsonl
        added = ReviewStore.default().add(load_jsonl(args.out).records)
        print(f"{added} new records in the review store")
    print(f"wrote {args.out}")


def cmd_import(args: argparse.Namespace) -> None:
    from .records import save_jsonl
    from .render import from_gpt4tools
    samples = json.loads(Path(args.file).read_text())
    tools = _registry(None).tools
    records, bad = [], 0
    for number, sample in enumerate(samples):
        try:
            records.append(from_gpt4tools(sample, source=args.source, tools=tools))
        except ValueError as exc:
            bad += 1
            print(f"warning: sample {number}: {exc}", file=sys.stderr)
    save_jsonl(records, args.out)
    print(f"imported {len(records)} records ({bad} not in GPT4Tools' format) -> {args.out}")


def cmd_export(args: argparse.Namespace) -> None:
    from .render import to_gpt4tools
    registry = _registry(None)
    samples = [sample for record in _load(args.data) for sample in to_gpt4tools(record, registry.tools)
               if not set(record.tools) - set(registry.tools)]
    Path(args.out).write_text(json.dumps(samples, indent=1, ensure_ascii=False))
    print(f"wrote {len(samples)} GPT4Tools samples -> {args.out}")


def cmd_split(args: argparse.Namespace) -> None:
    from .augment import split_by_tool
    from .records import save_jsonl
    registry = _registry(None)
    unseen = [name.strip() for name in args.unseen.split(";") if name.strip()]
    unknown = [name for name in unseen if name not in registry.tools]
    if unknown:
        raise SystemExit(f"error: unknown tool names {unknown}; names are the prompt names, e.g. "
                         f"'{next(iter(registry.tools))}'")
    out = Path(args.out)
    for part, records in split_by_tool(_load(args.data), unseen, args.test_fraction, args.seed).items():
        save_jsonl(records, out / f"{part}.jsonl")
        print(f"{part}: {len(records)} -> {out / f'{part}.jsonl'}")


def cmd_review(args: argparse.Namespace) -> None:
    from .review_store import ReviewStore
    store = ReviewStore(Path(args.db)) if args.db else ReviewStore.default()
    if args.action == "import":
        print(f"{store.add(_load(args.file))} new records in {store.path}")
    elif args.action == "export":
        status = None if args.status == "all" else args.status
        count = store.export(Path(args.out), status=status)
        print(f"wrote {count} records ({args.status}) -> {args.out}")
    else:
        print(json.dumps(store.counts(), indent=1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="self-instruct generation + filtering + augmentation")
    gen.add_argument("--images", default="assets", help="folder of images (and an optional annotations.json)")
    gen.add_argument("--n", type=int, default=200, help="about how many instructions to ask for")
    gen.add_argument("--teacher", default="template",
                     help="'template' (offline), an OpenAI-compatible URL (http://host:8000/v1#model), "
                          "'embedded', or a transformers model id / folder")
    gen.add_argument("--out", default=str(data_home() / "datasets" / "generated.jsonl"))
    gen.add_argument("--tools", default=None, help='tool classes as for --load (default: all 31)')
    gen.add_argument("--per-call", type=int, default=20, help="instructions asked per teacher call")
    gen.add_argument("--offer", type=int, default=0, help="tools offered per prompt (0: all)")
    gen.add_argument("--rpm", type=float, default=0.0, help="HTTP teacher: at most this many requests a minute")
    gen.add_argument("--timeout", type=float, default=120.0, help="HTTP teacher: seconds per request")
    gen.add_argument("--retries", type=int, default=3, help="HTTP teacher: retries on 429/5xx/time-out")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--no-augment", action="store_true", help="no negative/context/multi-turn samples")
    gen.add_argument("--review", action="store_true", help="also add the records to the review store")
    gen.set_defaults(func=cmd_generate)

    imp = sub.add_parser("import", help="GPT4Tools JSON (instruction/input/output) -> our JSONL")
    imp.add_argument("file")
    imp.add_argument("--out", required=True)
    imp.add_argument("--source", default="gpt4tools")
    imp.set_defaults(func=cmd_import)

    exp = sub.add_parser("export", help="our JSONL -> GPT4Tools JSON (one sample per trained step)")
    exp.add_argument("--data", required=True)
    exp.add_argument("--out", required=True)
    exp.set_defaults(func=cmd_export)

    split = sub.add_parser("split", help="train / test_seen / test_unseen, holding out tools")
    split.add_argument("--data", required=True)
    split.add_argument("--unseen", required=True, help="prompt names of held-out tools, separated by ';'")
    split.add_argument("--test-fraction", type=float, default=0.1)
    split.add_argument("--seed", type=int, default=0)
    split.add_argument("--out", required=True, help="folder for train.jsonl, test_seen.jsonl, test_unseen.jsonl")
    split.set_defaults(func=cmd_split)

    review = sub.add_parser("review", help="the review store: import records, export decisions, counts")
    review.add_argument("action", choices=["import", "export", "stats"])
    review.add_argument("file", nargs="?", help="import: a JSONL of records")
    review.add_argument("--status", default="accepted", choices=["accepted", "rejected", "pending", "all"])
    review.add_argument("--out", help="export: the JSONL to write")
    review.add_argument("--db", default=None, help="the store (default: $TOOLSMITH_HOME/review.sqlite)")
    review.set_defaults(func=cmd_review)

    args = parser.parse_args(argv)
    if args.command == "review" and ((args.action == "import" and not args.file)
                                     or (args.action == "export" and not args.out)):
        parser.error("review import needs FILE; review export needs --out")
    args.func(args)


if __name__ == "__main__":
    main()
