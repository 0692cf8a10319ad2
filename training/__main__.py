"""`python -m training generate|import|export|split|review|train|stats|evaluate|toolformer|toolace-r|bfcl`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent.embedded import ADAPTER_DIR
from agent.factory import add_engine_flag, default_template
from agent.prompts import TEMPLATES
from agent.shortlist import RETRIEVER_DIR, SHIPPED_RETRIEVER
from visual_tools import ToolRegistry, data_home


ADAPTER_DATA = ADAPTER_DIR / "data" / "train.jsonl"  # the shipped adapter's first-run records (every kind)


def _registry(spec: str | None) -> ToolRegistry:
    try:
        return ToolRegistry.from_load(spec or None)
    except ValueError as exc:
        raise SystemExit(f"error: --tools: {exc}") from None


def _load(path: str):
    from .data.records import load_jsonl
    try:
        report = load_jsonl(path)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {exc}") from None
    for error in report.errors:
        print(f"warning: {path}: {error}", file=sys.stderr)
    return report.records


def _offer(text: str) -> int | tuple[int, int]:
    low, _, high = text.partition("-")
    try:
        return (int(low), int(high)) if high else int(low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is neither a number nor LOW-HIGH") from None


def _shortlist(k: int, folder: str | None, registry: ToolRegistry):
    from agent.shortlist import load_shortlist
    shortlist, note = load_shortlist(k, folder, registry.all())
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return shortlist


def cmd_generate(args: argparse.Namespace) -> None:
    from .data.generate import build_dataset
    from .data.teachers import load_teacher
    registry = _registry(args.tools)
    teacher = load_teacher(args.teacher, rpm=args.rpm, timeout=args.timeout, retries=args.retries, engine=args.engine)
    # the offered lists are drawn from every tool, whatever --tools asks instructions for
    shortlist = _shortlist(args.shortlist, args.retriever, _registry(None)) if args.shortlist else None
    try:
        report = build_dataset(Path(args.images), teacher, registry, Path(args.out), n=args.n, per_call=args.per_call,
                               offer=args.offer, seed=args.seed, augment_data=not args.no_augment,
                               shortlist=shortlist)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None
    print(report.markdown())
    for line in report.generation.skipped_files + report.generation.jobs_failed:
        print(f"  {line}", file=sys.stderr)
    if args.review:
        from .data.review_store import ReviewStore
        from .data.records import load_jsonl
        added = ReviewStore.default().add(load_jsonl(args.out).records)
        print(f"{added} new records in the review store")
    print(f"wrote {args.out}")


def cmd_paraphrase(args: argparse.Namespace) -> None:
    from agent.controller import ControllerError
    from agent.factory import ControllerSpec, load_controller
    from .data.filters import filter_records
    from .data.paraphrase import paraphrase
    from .data.records import save_jsonl
    records = [r for r in _load(args.data) if r.kind in ("positive", "negative") and not r.given_steps]
    try:
        teacher = load_controller(ControllerSpec.parse(args.teacher, args.adapter, args.engine))
    except ControllerError as exc:
        raise SystemExit(f"error: {exc}") from None
    made, report = paraphrase(records, teacher, n=args.n, temperature=args.temperature)
    kept, dropped = filter_records(made, _registry(None))
    save_jsonl(kept, args.out)
    reasons = {**report.dropped, **dropped}
    print(f"{len(records)} instructions, {report.asked} paraphrases asked of {teacher.name}: {len(kept)} kept; "
          "dropped: " + (", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "none") + f" -> {args.out}")
    if args.review:
        from .data.review_store import ReviewStore
        print(f"{ReviewStore.default().add(kept)} new records in the review store")


def cmd_import(args: argparse.Namespace) -> None:
    from .data.records import save_jsonl
    from .data.render import from_gpt4tools
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
    from .data.render import to_gpt4tools
    registry = _registry(None)
    samples = [sample for record in _load(args.data) for sample in to_gpt4tools(record, registry.tools)
               if not set(record.tools) - set(registry.tools)]
    Path(args.out).write_text(json.dumps(samples, indent=1, ensure_ascii=False))
    print(f"wrote {len(samples)} GPT4Tools samples -> {args.out}")


def cmd_split(args: argparse.Namespace) -> None:
    from .data.augment import split_by_tool
    from .data.records import save_jsonl
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
    from .data.review_store import ReviewStore
    store = ReviewStore(Path(args.db)) if args.db else ReviewStore.default()
    if args.action == "import":
        print(f"{store.add(_load(args.file))} new records in {store.path}")
    elif args.action == "export":
        status = None if args.status == "all" else args.status
        count = store.export(Path(args.out), status=status)
        print(f"wrote {count} records ({args.status}) -> {args.out}")
    else:
        print(json.dumps(store.counts(), indent=1))


def cmd_train(args: argparse.Namespace) -> None:
    from .tuning.sft import TrainConfig, TrainingError, train
    config = TrainConfig(data=args.data, out=args.out, base=args.base, epochs=args.epochs, learning_rate=args.lr,
                         lora_r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                         cutoff=args.cutoff, batch_size=args.batch_size, grad_accum=args.grad_accum,
                         max_steps=args.max_steps, save_steps=args.save_steps, seed=args.seed,
                         chat_format=args.chat_format, sampling=args.sampling, load_in_8bit=args.load_in_8bit,
                         load_in_4bit=args.load_in_4bit, resume=args.resume, bf16=args.bf16,
                         init_adapter=args.init_adapter, decision_weight=args.decision_weight,
                         prompt=args.prompt or default_template(args.base, args.init_adapter))
    try:
        adapter = train(config)
    except TrainingError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"adapter saved to {adapter}, its shortlist classifier in {Path(adapter) / RETRIEVER_DIR}")


def cmd_stats(args: argparse.Namespace) -> None:
    from .tuning.sft import TrainConfig, TrainingError
    from .tuning.stats import dataset_stats
    config = TrainConfig(data=args.data, out="", base=args.base, epochs=args.epochs, cutoff=args.cutoff,
                         chat_format=args.chat_format, prompt=args.prompt or default_template(args.base))
    try:
        stats = dataset_stats(config, args.tokens_per_second)
    except TrainingError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.json:
        print(json.dumps(stats.as_dict(), indent=1))
        return
    d = stats.as_dict()
    rows = [("records", d["records"]), ("training sequences", d["sequences"]), ("tokens", d["tokens"]),
            ("tokens per record", d["tokens_per_record"]), ("trained tokens", d["trained_tokens"]),
            ("trained share", f"{100 * d['trained_share']:.1f} %"),
            ("dropped", ", ".join(f"{k}: {v}" for k, v in d["dropped"].items()) or "none"),
            (f"estimated time ({args.epochs:g} epoch(s), {args.tokens_per_second:g} tokens/s)",
             f"{d['seconds'] / 60:.1f} min")]
    print(f"{args.data}, prompt {stats.prompt}\n\n| measure | value |\n|---|---|")
    print("\n".join(f"| {name} | {value} |" for name, value in rows))


def _fit_retriever(data: str, out: Path) -> None:
    from .tuning.retriever import train_retriever
    from .tuning.sft import load_records
    records, _ = load_records(data)
    retriever = train_retriever(records, _registry(None), out, data=data)
    print(f"shortlist classifier ({len(retriever.classes)} tools) saved to {out}")


def cmd_retriever(args: argparse.Namespace) -> None:
    _fit_retriever(args.data, Path(args.out))


def cmd_mix(args: argparse.Namespace) -> None:
    from .data.mix import mix
    from .data.records import save_jsonl
    take = {}
    for item in args.take:
        name, _, n = item.rpartition("=")
        if not name or not n.isdigit():
            raise SystemExit(f"error: --take '{item}': write CATEGORY=N")
        take[name] = int(n)
    records, short = mix([r for path in args.data for r in _load(path)], take, args.seed)
    for name, n in short.items():
        print(f"warning: {n} fewer '{name}' records than asked", file=sys.stderr)
    save_jsonl(records, Path(args.out))
    print(f"{len(records)} records written to {args.out}")


def cmd_reoffer(args: argparse.Namespace) -> None:
    from .data.generate import reoffer
    from .data.records import save_jsonl
    registry = _registry(None)
    records = [r for path in args.data for r in _load(path)]
    records = reoffer(records, registry, _shortlist(5, args.retriever, registry), args.offer, args.seed)
    save_jsonl(records, Path(args.out))
    sizes = [len(r.tools) for r in records]
    print(f"{len(records)} records written to {args.out}; offered {sum(sizes) / max(len(sizes), 1):.2f} tools a "
          f"record ({min(sizes, default=0)}-{max(sizes, default=0)})")


def cmd_evaluate(args: argparse.Namespace) -> None:
    from agent.controller import ControllerError
    from agent.factory import ControllerSpec, load_controller
    from .evaluation.evaluate import evaluate, load_cases, markdown, offer, shortlisted, summary, write_report
    from .toolace_r.refine import SelfRefine
    tools = _registry(None).tools
    try:
        cases, problems = load_cases(args.data, tools)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {exc}") from None
    for problem in problems:
        print(f"warning: {args.data}: {problem}", file=sys.stderr)
    cases = cases[:args.limit] if args.limit else cases
    registry = _registry(None)
    if args.offer != "case":
        cases = offer(cases, [t.name for t in (registry.available() if args.offer == "available" else registry.all())])
    if args.shortlist:
        cases = shortlisted(cases, _shortlist(args.shortlist, args.retriever, registry))
    if not cases:
        raise SystemExit(f"error: no cases in {args.data}")
    try:
        spec = ControllerSpec.parse(args.controller, args.adapter, args.engine)
        controller = SelfRefine(load_controller(spec), args.refine, args.rounds, style="gpt4tools", tools=tools)
    except ControllerError as exc:
        raise SystemExit(f"error: {exc}") from None
    unseen = [name.strip() for name in (args.unseen or "").split(";") if name.strip()]
    predictions = evaluate(controller, cases, tools, unseen=unseen, strict_images=args.strict_images,
                           max_steps=args.max_steps, grammar=not args.no_grammar, template=spec.template)
    rows = summary(predictions)
    paths = write_report(predictions, Path(args.out)) if args.out else {}
    if args.json:
        print(json.dumps({"controller": controller.name, "rows": rows,
                          "files": {k: str(v) for k, v in paths.items()}}, indent=1))
    else:
        print(f"{controller.name} on {args.data}\n{markdown(rows)}")
    if args.refine != "none":
        print(f"mean refine rounds per step: {controller.mean_rounds():.2f}")


def _shortlist_flags(parser: argparse.ArgumentParser, default: int, what: str) -> None:
    parser.add_argument("--shortlist", type=int, default=default, metavar="K", help=f"K > 0: {what}; 0: every tool")
    parser.add_argument("--retriever", default=None,
                        help="the shortlist classifier's folder (default: the shipped adapter's)")


def main(argv: list[str] | None = None) -> None:
    from .toolace_r import cli as toolace_cli
    from .toolace_r.refine import REFINE_MODES, ROUNDS
    from .toolformer import cli as toolformer_cli
    from .tuning.stats import TOKENS_PER_SECOND
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="self-instruct generation + filtering + augmentation")
    gen.add_argument("--images", default="assets", help="folder of images (and an optional annotations.json)")
    gen.add_argument("--n", type=int, default=200, help="about how many instructions to ask for")
    gen.add_argument("--teacher", default="template",
                     help="'template' (offline), an OpenAI-compatible URL (http://host:8000/v1#model), "
                          "'embedded', or a transformers model id / folder")
    add_engine_flag(gen)
    gen.add_argument("--out", default=str(data_home() / "datasets" / "generated.jsonl"))
    gen.add_argument("--tools", default=None, help='tool classes as for --load (default: all 31)')
    gen.add_argument("--per-call", type=int, default=20, help="instructions asked per teacher call")
    gen.add_argument("--offer", type=_offer, default=0,
                     help="tools offered per prompt: N, or LOW-HIGH drawn for each record (0: all)")
    _shortlist_flags(gen, default=0, what="offered lists, ranked: the gold tools plus the retriever's likeliest "
                                          "others (as the chat: those above its threshold, at most K; exactly N "
                                          "where --offer gives N or a range)")
    gen.add_argument("--rpm", type=float, default=0.0, help="HTTP teacher: at most this many requests a minute")
    gen.add_argument("--timeout", type=float, default=120.0, help="HTTP teacher: seconds per request")
    gen.add_argument("--retries", type=int, default=3, help="HTTP teacher: retries on 429/5xx/time-out")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--no-augment", action="store_true", help="no negative/context/multi-turn samples")
    gen.add_argument("--review", action="store_true", help="also add the records to the review store")
    gen.set_defaults(func=cmd_generate)

    par = sub.add_parser("paraphrase", help="new records: an LLM rewrites each instruction, same gold calls")
    par.add_argument("--data", required=True, help="records JSONL (positives and negatives are paraphrased)")
    par.add_argument("--teacher", default="embedded", help="embedded, an http(s)://…/v1[#model] URL or a model")
    par.add_argument("--adapter", default="none", help="a LoRA adapter for the teacher (default none: the plain "
                                                       "model; the tool-format adapter would not paraphrase)")
    add_engine_flag(par)
    par.add_argument("--n", type=int, default=2, help="paraphrases asked per instruction")
    par.add_argument("--temperature", type=float, default=0.8)
    par.add_argument("--out", required=True)
    par.add_argument("--review", action="store_true", help="also add the kept records to the review store")
    par.set_defaults(func=cmd_paraphrase)

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
    split.add_argument("--unseen", default="", help="prompt names of held-out tools, separated by ';' (none: all seen)")
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

    tr = sub.add_parser("train", help="LoRA fine-tuning of the controller (GPT4Tools' defaults)")
    tr.add_argument("--data", required=True, help="records JSONL, or review:accepted for the review store's")
    tr.add_argument("--base", default="embedded", help="'embedded' (SmolLM2-135M), a hub id or a folder")
    tr.add_argument("--out", required=True, help="the run folder (checkpoints, trainer_log.jsonl, adapter/)")
    tr.add_argument("--epochs", type=float, default=3.0)
    tr.add_argument("--lr", type=float, default=3e-4)
    tr.add_argument("--lora-r", type=int, default=16)
    tr.add_argument("--lora-alpha", type=int, default=16)
    tr.add_argument("--lora-dropout", type=float, default=0.05)
    tr.add_argument("--cutoff", type=int, default=2048, help="longest example in tokens (longer ones are dropped)")
    tr.add_argument("--batch-size", type=int, default=4)
    tr.add_argument("--grad-accum", type=int, default=1)
    tr.add_argument("--max-steps", type=int, default=-1, help="stop after this many steps (-1: by epochs)")
    tr.add_argument("--save-steps", type=int, default=50, help="checkpoint every N steps (for --resume)")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--chat-format", default="auto", choices=["auto", "chat", "vicuna", "raw"])
    tr.add_argument("--sampling", default="group_by_length", choices=["group_by_length", "random"])
    tr.add_argument("--load-in-8bit", action="store_true", help="CUDA only")
    tr.add_argument("--load-in-4bit", action="store_true", help="CUDA only")
    tr.add_argument("--resume", action="store_true", help="continue from the run folder's last checkpoint")
    tr.add_argument("--init-adapter", default=None,
                    help="start from this LoRA adapter of the same base (e.g. the shipped one) instead of a new one")
    tr.add_argument("--decision-weight", type=float, default=1.0,
                    help="count the Yes / No of 'Do I need to use a tool?' this many times in the loss (1: plain)")
    tr.add_argument("--prompt", choices=TEMPLATES, default=None,
                    help="the prompt template, recorded in the adapter's toolsmith.json (default: --init-adapter's; "
                         "else compact for the embedded base, gpt4tools for any other)")
    tr.add_argument("--bf16", action="store_true",
                    help="bfloat16 autocast on the CPU too (a bf16 GPU always uses it); ~1.8x on AVX512-BF16 CPUs")
    tr.set_defaults(func=cmd_train)

    st = sub.add_parser("stats", help="what a training run on --data reads: records, sequences, tokens, time")
    st.add_argument("--data", required=True, help="records JSONL, or review:accepted")
    st.add_argument("--base", default="embedded", help="the base model whose tokenizer counts (as train)")
    st.add_argument("--prompt", choices=TEMPLATES, default=None, help="as train (default: compact for the embedded "
                                                                      "base, gpt4tools for any other)")
    st.add_argument("--epochs", type=float, default=1.0)
    st.add_argument("--cutoff", type=int, default=2048)
    st.add_argument("--chat-format", default="auto", choices=["auto", "chat", "vicuna", "raw"])
    st.add_argument("--tokens-per-second", type=float, default=TOKENS_PER_SECOND,
                    help=f"training throughput for the estimate (default {TOKENS_PER_SECOND:g}: the embedded model "
                         "on a 2-core CPU)")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_stats)

    ev = sub.add_parser("evaluate", help="GPT4Tools success rates (SR_t, SR_act, SR_args, SR)")
    ev.add_argument("--data", required=True, help="GPT4Tools JSON, records JSONL or a plain case JSONL")
    ev.add_argument("--controller", default="embedded", help="as app.py --controller")
    ev.add_argument("--adapter", default=None, help="a LoRA adapter folder for the controller; 'none': no adapter "
                                                    "(embedded: the base without the shipped one)")
    add_engine_flag(ev)
    ev.add_argument("--unseen", default=None, help="prompt names of tools held out of training, ';'-separated")
    ev.add_argument("--limit", type=int, default=0, help="only the first N cases")
    ev.add_argument("--offer", default="case", choices=["case", "available", "all"],
                    help="tools in the prompt: each case's own list (all tools where it has none), the tools "
                         "available here (what the app offers), or every tool (what a machine with every checkpoint "
                         "offers)")
    _shortlist_flags(ev, default=0, what="each case offers the retriever's likeliest of its --offer tools as the "
                                         "chat does, ranked, at most K (gold tools are not forced in: misses count)")
    ev.add_argument("--no-grammar", action="store_true", help="decode without the grammar of the offered tools")
    ev.add_argument("--max-steps", type=int, default=5)
    ev.add_argument("--strict-images", action="store_true",
                    help="an image argument must come from the gold image (GPT4Tools only checks '.png')")
    ev.add_argument("--out", default=None, help="folder for summary.md, summary.csv, predictions.jsonl")
    ev.add_argument("--json", action="store_true", help="print the table as JSON")
    ev.add_argument("--refine", default="none", choices=REFINE_MODES,
                    help="ToolACE-R self-refinement of each step (adaptive: until two answers agree)")
    ev.add_argument("--rounds", type=int, default=ROUNDS, help="most refine rounds (paper: 5)")
    ev.set_defaults(func=cmd_evaluate)

    ret = sub.add_parser("retriever", help="train the shortlist's classifier (tool retrieval) on records")
    ret.add_argument("--data", default=str(ADAPTER_DATA), help="records JSONL, or review:accepted")
    ret.add_argument("--out", default=str(SHIPPED_RETRIEVER), help="the folder to write (beside an adapter)")
    ret.set_defaults(func=cmd_retriever)

    mx = sub.add_parser("mix", help="a training mixture: N records of each category from generated records")
    mx.add_argument("--data", nargs="+", required=True, help="records JSONL files")
    mx.add_argument("--take", action="append", required=True, metavar="CATEGORY=N",
                    help="'no tool', 'two-step', 'two-step, continued' or a tool's name; repeat")
    mx.add_argument("--out", required=True)
    mx.add_argument("--seed", type=int, default=0)
    mx.set_defaults(func=cmd_mix)

    ro = sub.add_parser("reoffer", help="draw every record's offered tools again, as the chat's shortlist offers "
                                        "them (ranked, sized by confidence; the gold tools among them)")
    ro.add_argument("--data", nargs="+", required=True, help="records JSONL files (concatenated)")
    ro.add_argument("--out", required=True)
    ro.add_argument("--retriever", default=None, help="the shortlist classifier's folder (default: the shipped one)")
    ro.add_argument("--offer", type=_offer, default=0, help="0: as the chat (by confidence); N or LOW-HIGH: that many")
    ro.add_argument("--seed", type=int, default=0)
    ro.set_defaults(func=cmd_reoffer)

    toolformer_cli.add_parser(sub)
    toolace_cli.add_parsers(sub)
    args = parser.parse_args(argv)
    if args.command == "review" and ((args.action == "import" and not args.file)
                                     or (args.action == "export" and not args.out)):
        parser.error("review import needs FILE; review export needs --out")
    if args.command == "toolformer":
        toolformer_cli.main(args)
    else:
        args.func(args)


if __name__ == "__main__":
    main()
