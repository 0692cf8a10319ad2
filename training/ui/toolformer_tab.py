"""The Train tab's Toolformer section: annotate → fine-tune → evaluate as one subprocess, read from its folder.

A run lives in `$TOOLSMITH_HOME/toolformer/<name>`: the command, the process id, `toolformer_log.jsonl`
(stages, progress, the kept-calls table, the results), the trainer's log, C* and the candidate log.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from visual_tools import data_home
from visual_tools.text_tools import DEFAULT_CORPUS

from ..tuning.run_files import LOG_FILE as TRAINER_LOG
from ..toolformer.cli import LOG_FILE
from ..toolformer.corpus import make_corpus, write_jsonl
from ..toolformer.prompts import PROMPTS
from .runs import RunKind, read_events, wire

RUNS = RunKind("toolformer", LOG_FILE)
SYNTHETIC = "synthetic (Calculator + Calendar texts, generated)"
WIKI = str(DEFAULT_CORPUS)  # the shipped passages: held-out text for perplexity
CANDIDATE_COLUMNS = ["gain (L⁻ − L⁺)", "call", "text", "kept"]
STAGES = {"annotate": "1/3 annotating", "train": "2/3 fine-tuning", "evaluate": "3/3 evaluating"}


def corpus_choices() -> list[str]:
    folder = data_home() / "datasets"
    files = sorted(str(p) for p in folder.glob("*.jsonl")) if folder.is_dir() else []
    return [SYNTHETIC, WIKI, *files]


def candidates_view(run: Path, n: int = 8) -> pd.DataFrame:
    """The highest- and lowest-scoring candidates (the paper's Table 10), to inspect the filter."""
    texts = [row["original"] for row in read_events(run / "cstar.jsonl")]
    scored = [c for c in read_events(run / "cstar.candidates.jsonl") if c.get("gain") is not None]
    scored.sort(key=lambda c: c["gain"], reverse=True)
    shown = scored if len(scored) <= 2 * n else scored[:n] + scored[-n:]
    return pd.DataFrame([[round(c["gain"], 3), c["call"], texts[c["text_id"]] if c["text_id"] < len(texts) else "",
                          "✅" if c["kept"] else ""] for c in shown], columns=CANDIDATE_COLUMNS)


def results_table(events: list[dict]) -> str:
    """Math accuracy per k, base vs tuned, and perplexity with calls disabled."""
    results = {}
    for event in events:
        if event.get("event") == "evaluated":
            results[event.get("label") or "base"] = event["result"]
    if not results:
        return ""
    names = [m for m in ("base", "tuned") if m in results]
    lines = ["| k | " + " | ".join(f"accuracy {m} (%)" for m in names) + " | inputs with a call, tuned (%) |",
             "|---" * (len(names) + 2) + "|"]
    for i, row in enumerate(results[names[0]]["rows"]):
        cells = [str(results[m]["rows"][i]["accuracy"]) for m in names]
        calls = results["tuned"]["rows"][i]["inputs with a call (%)"] if "tuned" in results else "–"
        lines.append(f"| {row['k']} | " + " | ".join(cells) + f" | {calls} |")
    ppl = ", ".join(f"{m} {results[m]['perplexity']}" for m in names if "perplexity" in results[m])
    problems = results[names[0]]["rows"][0]["problems"]
    return (f"**Math ({problems} problems of {Path(results[names[0]]['math']).name})**\n\n" + "\n".join(lines)
            + (f"\n\nPerplexity on held-out text, calls disabled: {ppl}" if ppl else ""))


@dataclass(frozen=True)
class RunView:
    """What the section shows of a run."""

    text: str
    kept: str
    candidates: pd.DataFrame
    results: str
    tail: str


def tf_status(name: str | None) -> RunView:
    run = RUNS.get(name)
    if run is None:
        return RunView("No run selected.", "", pd.DataFrame(columns=CANDIDATE_COLUMNS), "", "")
    stage = next((e for e in reversed(run.events) if e.get("event") == "stage"), {})
    if stage.get("stage") == "train":
        logs = [e for e in read_events(run.path / TRAINER_LOG) if e.get("event") == "log"]
        done, total = (logs[-1]["step"], logs[-1]["max_steps"]) if logs else (0, 0)
    else:
        progress = [e for e in run.events if e.get("event") == "progress" and e.get("stage") == stage.get("stage")]
        done, total = (progress[-1]["done"], progress[-1]["total"]) if progress else (0, 0)
    detail = ""
    if run.state == "running" and stage:
        label = STAGES.get(stage["stage"], stage["stage"]) + (f" ({stage['model']} model)" if "model" in stage else "")
        detail = f" · {label}" + (f" · {done} / {total}" if total else "")
    else:
        done = total = 0
    annotated = next((e for e in run.events if e.get("event") == "annotated"), None)
    return RunView(run.headline(detail, done, total), annotated["report"] if annotated else "",
                   candidates_view(run.path) if annotated else pd.DataFrame(columns=CANDIDATE_COLUMNS),
                   results_table(run.events), run.tail())


def start_tf_run(name: str, corpus: str, base: str, tools: list[str], settings: dict[str, Any]) -> str:
    """Launch `python -m training toolformer run`; one active run at a time."""
    if not tools:
        raise ValueError("choose at least one tool")
    if any(tool not in PROMPTS for tool in tools):
        raise ValueError(f"Toolformer tools are {', '.join(PROMPTS)}")
    if corpus != SYNTHETIC and not Path(corpus).is_file():
        raise ValueError(f"no such corpus: {corpus}")

    def command(run: Path) -> list[str]:
        texts = corpus
        if corpus == SYNTHETIC:
            texts = str(run / "corpus.jsonl")
            write_jsonl(Path(texts), make_corpus(int(settings["limit"]), seed=0))
        argv = [sys.executable, "-m", "training", "toolformer", "run", "--corpus", texts, "--model", base,
                "--out", str(run), "--ppl", WIKI]
        for tool in tools:
            argv += ["--tool", tool]
        for flag, value in settings.items():
            argv += [f"--{flag}", str(value)]
        return argv

    return RUNS.start(name, command).name


def build_toolformer_tab() -> None:
    """Build the Toolformer section inside the current gr.Blocks (it wires itself: nothing to return)."""
    gr.Markdown("Annotate a corpus with API calls (positions, sampled calls, execution, the L⁻ − L⁺ ≥ τf filter), "
                "fine-tune on C*, then compare math accuracy with calls triggered in the top-k (k = 0: none).")
    with gr.Row():
        with gr.Column(scale=2):
            corpus = gr.Dropdown(corpus_choices(), value=SYNTHETIC, label="Corpus", allow_custom_value=True)
            tools = gr.CheckboxGroup(list(PROMPTS), value=["Calculator", "Calendar"], label="Tools")
            base = gr.Textbox("embedded", label="Model ('embedded', a hub id or a folder)")
            name = gr.Textbox("toolformer-1", label="Run name")
            with gr.Row():
                limit = gr.Number(100, label="Texts", precision=0, minimum=1)
                positions = gr.Number(5, label="Positions k per text", precision=0, minimum=1)
                samples = gr.Number(5, label="Calls m per position", precision=0, minimum=1)
            with gr.Row():
                epochs = gr.Number(3, label="Epochs", minimum=0.1)
                eval_limit = gr.Number(50, label="Math problems", precision=0, minimum=1)
                ks = gr.Textbox("0,1,3,10", label="Top-k values")
            with gr.Row():
                start = gr.Button("Start", variant="primary")
                stop = gr.Button("Stop", variant="stop")
        with gr.Column(scale=3):
            run = gr.Dropdown(RUNS.names(), label="Run", allow_custom_value=True)
            status = gr.Markdown("No run selected.")
            kept = gr.Markdown(label="Calls per tool")
            results = gr.Markdown()
            candidates = gr.Dataframe(pd.DataFrame(columns=CANDIDATE_COLUMNS), label="Highest- and lowest-scoring "
                                      "candidates (the paper's Table 10)", wrap=True, interactive=False)
            tail = gr.Textbox(label="Log", lines=5, max_lines=12, interactive=False, autoscroll=True)

    def show(name_: str | None):
        view = tf_status(name_)
        return view.text, view.kept, view.results, view.candidates, view.tail

    def begin(corpus_, tools_, base_, name_, limit_, positions_, samples_, epochs_, eval_limit_, ks_) -> str:
        settings = {"limit": int(limit_), "positions": int(positions_), "samples": int(samples_),
                    "epochs": epochs_, "eval-limit": int(eval_limit_), "k": (ks_ or "0,10").replace(" ", "")}
        return start_tf_run((name_ or "").strip(), (corpus_ or "").strip(), (base_ or "embedded").strip(),
                            list(tools_ or []), settings)

    wire(RUNS, "toolformer", begin, [corpus, tools, base, name, limit, positions, samples, epochs, eval_limit, ks],
         show, [status, kept, results, candidates, tail], run=run, start=start, stop=stop)
