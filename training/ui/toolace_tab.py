"""The Train tab's ToolACE-R section: iterative selection as one subprocess, read from its run folder.

A run lives in `$TOOLSMITH_HOME/toolace-r/<name>`: the command, the process id, `toolace_log.jsonl` (stages,
progress, one row per iteration), the difficulty of each sample, and `iter-N/` with each iteration's adapter.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from ..tuning.run_files import LOG_FILE as TRAINER_LOG
from ..toolace_r.cli import iteration_table
from ..toolace_r.settings import LOG_FILE, Settings
from .runs import RunKind, datasets_choices, read_events, wire

RUNS = RunKind("toolace-r", LOG_FILE)
STAGES = {"evaluating": "evaluating on the held-out samples", "scoring": "sampling k answers per sample (difficulty)",
          "training": "training the adapter"}
PLOT_COLUMNS = ["iteration", "value", "series"]


def plot_frame(events: list[dict]) -> pd.DataFrame:
    """Dev score (%) and kept samples per iteration, in long form for one plot with two lines."""
    rows = []
    for e in (e for e in events if e.get("event") == "iteration"):
        if e.get("score") is not None:
            rows.append([e["iteration"], e["score"], "dev score (mean O, %)"])
        if e.get("kept") is not None:
            rows.append([e["iteration"], e["kept"], "kept samples"])
    return pd.DataFrame(rows, columns=PLOT_COLUMNS)


@dataclass(frozen=True)
class RunView:
    """What the section shows of a run."""

    text: str
    table: str
    plot: pd.DataFrame
    tail: str
    adapter: str


def status(name: str | None) -> RunView:
    run = RUNS.get(name)
    if run is None:
        return RunView("No run selected.", "", pd.DataFrame(columns=PLOT_COLUMNS), "", "")
    stage = next((e for e in reversed(run.events) if e.get("event") == "stage"), {})
    detail, step, total = "", 0, 0
    if run.state == "running" and stage:
        if stage["stage"] == "training":
            logs = [e for e in read_events(run.path / f"iter-{stage['iteration']}" / TRAINER_LOG)
                    if e.get("event") == "log"]
            step, total = (logs[-1]["step"], logs[-1]["max_steps"]) if logs else (0, 0)
        elif stage["stage"] == "scoring":
            progress = [e for e in run.events if e.get("event") == "progress"]
            step, total = (progress[-1]["done"], progress[-1]["total"]) if progress else (0, 0)
        detail = f" · iteration {stage['iteration']}: {STAGES.get(stage['stage'], stage['stage'])}" + (
            f" · {step} / {total}" if total else "")
    done = next((e for e in run.events if e.get("event") == "done"), {})
    return RunView(run.headline(detail, step, total), iteration_table(run.path) if run.events else "",
                   plot_frame(run.events), run.tail(), done.get("best_adapter") or "")


def start_run(name: str, data: str, base: str, settings: dict[str, Any]) -> str:
    """Launch `python -m training toolace-r`; one active run at a time."""
    Settings(iters=int(settings["iters"]), alpha=float(settings["alpha"]), beta=float(settings["beta"]),
             k=int(settings["k"])).check()
    if not data or data.startswith("review:"):
        raise ValueError("choose a records JSONL, ToolACE's data.json or a samples JSONL")
    if not Path(data).is_file():
        raise ValueError(f"no such data file: {data}")
    if settings.get("init-adapter") and not (Path(settings["init-adapter"]) / "adapter_config.json").is_file():
        raise ValueError(f"no adapter in {settings['init-adapter']}")

    def command(run: Path) -> list[str]:
        argv = [sys.executable, "-m", "training", "toolace-r", "--data", data, "--base", base, "--out", str(run)]
        for flag, value in settings.items():
            argv += [f"--{flag}", str(value)]
        return argv

    return RUNS.start(name, command).name


def build_toolace_tab() -> None:
    """Build the ToolACE-R section inside the current gr.Blocks (it wires itself: nothing to return)."""
    gr.Markdown("Score every sample with the current model (k sampled answers, Hungarian-matched against the gold "
                "calls: difficulty D), keep α < D < β, train the adapter further on them (each also as a "
                "self-refine turn), and repeat while the held-out score improves.")
    with gr.Row():
        with gr.Column(scale=2):
            data = gr.Dropdown([c for c in datasets_choices() if not c.startswith("review:")],
                               label="Data (records JSONL, ToolACE data.json or samples JSONL)",
                               allow_custom_value=True)
            base = gr.Textbox("embedded", label="Base model ('embedded', a hub id or a folder)")
            with gr.Row():
                data_format = gr.Radio([("function calling (BFCL's prompt)", "python"),
                                        ("GPT4Tools steps (the Chat's prompt)", "gpt4tools")], value="python",
                                       label="Render records as")
                init = gr.Textbox(label="Start from adapter (optional)", placeholder="assets/controller-lora")
            name = gr.Textbox("toolace-r-1", label="Run name")
            with gr.Row():
                iters = gr.Number(2, label="Iterations", precision=0, minimum=1)
                alpha = gr.Number(0.0, label="α (keep D > α)", minimum=0, maximum=1)
                beta = gr.Number(0.9, label="β (keep D < β)", minimum=0, maximum=1)
                k = gr.Number(8, label="Samples k", precision=0, minimum=1)
            with gr.Row():
                limit = gr.Number(200, label="Samples used (0: all)", precision=0, minimum=0)
                epochs = gr.Number(2, label="Epochs", minimum=0.1)
                max_steps = gr.Number(-1, label="Max steps per iteration (-1: epochs)", precision=0)
                patience = gr.Number(0, label="Patience (iterations without improvement)", precision=0, minimum=0)
            with gr.Row():
                start = gr.Button("Start", variant="primary")
                stop = gr.Button("Stop", variant="stop")
        with gr.Column(scale=3):
            run = gr.Dropdown(RUNS.names(), label="Run", allow_custom_value=True)
            state = gr.Markdown("No run selected.")
            table = gr.Markdown()
            plot = gr.LinePlot(pd.DataFrame(columns=PLOT_COLUMNS), x="iteration", y="value", color="series",
                               title="Per iteration", height=260)
            adapter = gr.Textbox(label="Best adapter", interactive=False)
            tail = gr.Textbox(label="Log", lines=5, max_lines=12, interactive=False, autoscroll=True)

    def show(name_: str | None):
        view = status(name_)
        return view.text, view.table, view.plot, view.adapter, view.tail

    def begin(data_, base_, name_, iters_, alpha_, beta_, k_, limit_, epochs_, max_steps_, format_, init_,
              patience_) -> str:
        settings = {"iters": int(iters_), "alpha": alpha_, "beta": beta_, "k": int(k_), "limit": int(limit_),
                    "epochs": epochs_, "max-steps": int(max_steps_), "format": format_ or "python",
                    "patience": int(patience_)}
        if (init_ or "").strip():
            settings["init-adapter"] = init_.strip()
        return start_run((name_ or "").strip(), (data_ or "").strip(), (base_ or "embedded").strip(), settings)

    wire(RUNS, "toolace", begin, [data, base, name, iters, alpha, beta, k, limit, epochs, max_steps, data_format,
                                  init, patience],
         show, [state, table, plot, adapter, tail], run=run, start=start, stop=stop)
