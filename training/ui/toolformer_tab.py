"""The Train tab's Toolformer section: annotate → fine-tune → evaluate as one subprocess, read from its folder.

A run lives in `$TOOLSMITH_HOME/toolformer/<name>`: the command, the process id, `toolformer_log.jsonl`
(stages, progress, the kept-calls table, the results), the trainer's log, C* and the candidate log.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from visual_tools import data_home
from visual_tools.text_tools import DEFAULT_CORPUS

from ..sft import LOG_FILE as TRAINER_LOG
from ..toolformer.annotate import write_jsonl
from ..toolformer.cli import LOG_FILE
from ..toolformer.corpus import make_corpus
from ..toolformer.prompts import PROMPTS
from .train_tab import (RUN_NAME, failure, launch, list_runs, new_run, output_of, process_state, progress_bar,
                        read_events, runs_dir, stop_process)

KIND = "toolformer"  # runs live in $TOOLSMITH_HOME/toolformer/<name>
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


def tf_status(name: str | None) -> dict[str, Any]:
    empty = {"state": "none", "text": "No run selected.", "kept": "", "candidates": pd.DataFrame(
        columns=CANDIDATE_COLUMNS), "results": "", "tail": ""}
    if not name or not RUN_NAME.fullmatch(name) or not (runs_dir(KIND) / name / "command.json").is_file():
        return empty
    run = runs_dir(KIND) / name
    events = read_events(run / LOG_FILE)
    output = output_of(run)
    state = process_state(run, any(e.get("event") == "done" for e in events))
    stage = next((e for e in reversed(events) if e.get("event") == "stage"), {})
    done, total = 0, 0
    if stage.get("stage") == "train":
        logs = [e for e in read_events(run / TRAINER_LOG) if e.get("event") == "log"]
        done, total = (logs[-1]["step"], logs[-1]["max_steps"]) if logs else (0, 0)
    else:
        progress = [e for e in events if e.get("event") == "progress" and e.get("stage") == stage.get("stage")]
        done, total = (progress[-1]["done"], progress[-1]["total"]) if progress else (0, 0)
    text = f"**{name}**: {state}"
    if state == "running" and stage:
        label = STAGES.get(stage["stage"], stage["stage"]) + (f" ({stage['model']} model)" if "model" in stage else "")
        text += f" · {label}" + (f" · {done} / {total}" if total else "")
        if total:
            text = f"{progress_bar(done, total)}\n\n{text}"
    if state == "failed":
        text += f" · {failure(output)}"
    annotated = next((e for e in events if e.get("event") == "annotated"), None)
    return {"state": state, "text": text, "kept": annotated["report"] if annotated else "",
            "candidates": candidates_view(run) if annotated else empty["candidates"],
            "results": results_table(events), "tail": "\n".join(output.splitlines()[-12:])}


def start_tf_run(name: str, corpus: str, base: str, tools: list[str], settings: dict[str, Any]) -> Path:
    """Launch `python -m training toolformer run` in its own process group; one active run at a time."""
    if not tools:
        raise ValueError("choose at least one tool")
    if any(tool not in PROMPTS for tool in tools):
        raise ValueError(f"Toolformer tools are {', '.join(PROMPTS)}")
    run = new_run(KIND, name, lambda r: tf_status(r)["state"])
    if corpus == SYNTHETIC:
        corpus = str(run / "corpus.jsonl")
        write_jsonl(Path(corpus), make_corpus(int(settings["limit"]), seed=0))
    elif not Path(corpus).is_file():
        run.rmdir()
        raise ValueError(f"no such corpus: {corpus}")
    command = [sys.executable, "-m", "training", "toolformer", "run", "--corpus", corpus, "--model", base,
               "--out", str(run), "--ppl", WIKI]
    for tool in tools:
        command += ["--tool", tool]
    for flag, value in settings.items():
        command += [f"--{flag}", str(value)]
    launch(run, command)
    return run


def stop_tf_run(name: str) -> None:
    if tf_status(name)["state"] != "running":
        raise ValueError("no running run selected")
    stop_process(runs_dir(KIND) / name)


def build_toolformer_tab() -> dict[str, Any]:
    """Build the Toolformer section inside the current gr.Blocks; returns its components by name."""
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
            run = gr.Dropdown(list_runs(KIND), label="Run", allow_custom_value=True)
            status = gr.Markdown("No run selected.")
            kept = gr.Markdown(label="Calls per tool")
            results = gr.Markdown()
            candidates = gr.Dataframe(pd.DataFrame(columns=CANDIDATE_COLUMNS), label="Highest- and lowest-scoring "
                                      "candidates (the paper's Table 10)", wrap=True, interactive=False)
            tail = gr.Textbox(label="Log", lines=5, max_lines=12, interactive=False, autoscroll=True)
    timer = gr.Timer(2.0)

    def show(name_: str | None):
        info = tf_status(name_)
        return info["text"], info["kept"], info["results"], info["candidates"], info["tail"]

    def on_start(corpus_, tools_, base_, name_, limit_, positions_, samples_, epochs_, eval_limit_, ks_):
        settings = {"limit": int(limit_), "positions": int(positions_), "samples": int(samples_),
                    "epochs": epochs_, "eval-limit": int(eval_limit_), "k": (ks_ or "0,10").replace(" ", "")}
        try:
            started = start_tf_run((name_ or "").strip(), (corpus_ or "").strip(), (base_ or "embedded").strip(),
                                   list(tools_ or []), settings)
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return gr.update(choices=list_runs(KIND), value=started.name), *show(started.name)

    def on_stop(name_: str | None):
        try:
            stop_tf_run(name_ or "")
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return show(name_)

    outputs = [status, kept, results, candidates, tail]
    start.click(on_start, [corpus, tools, base, name, limit, positions, samples, epochs, eval_limit, ks],
                [run, *outputs], api_name="toolformer_start")
    stop.click(on_stop, run, outputs, api_name="toolformer_stop")
    run.change(show, run, outputs, api_name="toolformer_status")
    timer.tick(show, run, outputs, api_visibility="private")
    return {"run": run, "status": status, "start": start, "stop": stop, "timer": timer}
