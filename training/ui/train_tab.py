"""The Train tab's LoRA section: a preview of the data (`python -m training stats`), then `python -m training train`
as a run (training/ui/runs.py) that writes a JSONL log; progress, loss plot, Stop (the trainer saves the adapter
first), load in Chat."""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from agent.factory import default_template
from agent.prompts import TEMPLATES

from ..tuning.run_files import ADAPTER_DIR, LOG_FILE
from .runs import RUN_NAME, RunKind, datasets_choices, wire

RUNS = RunKind("runs", LOG_FILE, graceful=True, doing="training")
EMPTY_LOSS = {"step": [], "loss": []}


@dataclass(frozen=True)
class RunView:
    """What the section shows of a run."""

    text: str
    loss: pd.DataFrame
    tail: str
    adapter: str


def run_status(name: str | None) -> RunView:
    """A run's state, progress, loss curve, log tail and adapter; read from its folder only."""
    run = RUNS.get(name)
    if run is None:
        return RunView("No run selected.", pd.DataFrame(EMPTY_LOSS), "", "")
    logs = [e for e in run.events if e.get("event") == "log" and "loss" in e]
    last = logs[-1] if logs else {}
    step, total = last.get("step", 0), last.get("max_steps") or next(
        (e["max_steps"] for e in run.events if e.get("event") == "start"), 0)
    detail = f" · step {step} / {total} ({100 * step / total:.0f} %)" if total else ""
    if run.state == "running" and last.get("eta") is not None:
        detail += f" · ETA {int(last['eta']) // 60} min {int(last['eta']) % 60} s"
    if last.get("loss") is not None:
        detail += f" · loss {last['loss']:.4f}"
    adapter = run.path / ADAPTER_DIR
    return RunView(run.headline(detail, step, total, "the process ended without saving an adapter"),
                   pd.DataFrame({"step": [e["step"] for e in logs], "loss": [e["loss"] for e in logs]}),
                   run.tail(15), str(adapter) if (adapter / "adapter_config.json").is_file() else "")


def start_run(name: str, data: str, base: str, settings: dict[str, float]) -> str:
    """Launch `python -m training train`; a run stopped or interrupted before its adapter continues from its
    checkpoints under the same name."""
    if not data:
        raise ValueError("choose the training data")
    if RUN_NAME.fullmatch(name or "") and (RUNS.home() / name / ADAPTER_DIR).exists():
        raise ValueError(f"run '{name}' already has an adapter; choose another name")

    def command(run):
        argv = [sys.executable, "-m", "training", "train", "--data", data, "--base", base, "--out", str(run)]
        for flag, value in settings.items():
            argv += [f"--{flag}", str(value)]
        return argv + (["--resume"] if (run / "checkpoints").is_dir() else [])

    return RUNS.start(name, command, reuse=True).name


def preview(data: str, base: str, prompt: str, epochs: float, cutoff: int) -> str:
    """What a run on `data` would read (records, sequences, tokens, trained tokens, time): `training stats`."""
    from ..tuning.sft import TrainConfig, TrainingError
    from ..tuning.stats import dataset_stats
    if not data:
        return "Choose the training data first."
    base = base or "embedded"
    config = TrainConfig(data=data, out="", base=base, epochs=epochs, cutoff=int(cutoff),
                         prompt=default_template(base) if prompt == AUTO else prompt)
    try:
        return dataset_stats(config).markdown()
    except TrainingError as exc:
        return f"⚠️ {exc}"


AUTO = "auto"  # the Prompt radio's default: compact for the embedded base, gpt4tools for any other (train's rule)


@dataclass(frozen=True)
class TrainTab:
    """What app.py wires: the adapter and its button (load in Chat), and what to refresh on page load."""

    adapter: gr.Textbox
    load_in_chat: gr.Button
    on_load: tuple[Callable[..., Any], None, list[gr.components.Component]]


def build_train_tab() -> TrainTab:
    """Build the LoRA section inside the current gr.Blocks."""
    with gr.Row():
        with gr.Column(scale=2):
            data = gr.Dropdown(datasets_choices(), label="Data (a records JSONL, or the review store's accepted)",
                               allow_custom_value=True)
            base = gr.Textbox("embedded", label="Base model ('embedded', a hub id or a folder)")
            name = gr.Textbox("lora-1", label="Run name")
            with gr.Row():
                epochs = gr.Number(3, label="Epochs", minimum=0.1)
                lr = gr.Number(3e-4, label="Learning rate")
                max_steps = gr.Number(-1, label="Max steps (-1: epochs)", precision=0)
            with gr.Row():
                rank = gr.Number(16, label="LoRA r", precision=0, minimum=1)
                alpha = gr.Number(16, label="LoRA alpha", precision=0, minimum=1)
                batch = gr.Number(4, label="Batch size", precision=0, minimum=1)
                cutoff = gr.Number(2048, label="Cutoff (tokens)", precision=0, minimum=64)
            prompt = gr.Radio([AUTO, *TEMPLATES], value=AUTO, label="Prompt template (recorded with the adapter; "
                                                                    "auto: compact for 'embedded', else gpt4tools)")
            with gr.Row():
                count = gr.Button("Preview data")
                start = gr.Button("Start", variant="primary")
                stop = gr.Button("Stop", variant="stop")
        with gr.Column(scale=3):
            stats = gr.Markdown("*Preview data* counts what a run will read and how long it should take.",
                                elem_id="train-preview")
            run = gr.Dropdown(RUNS.names(), label="Run", allow_custom_value=True)
            status = gr.Markdown("No run selected.")
            loss = gr.LinePlot(pd.DataFrame({"step": [], "loss": []}), x="step", y="loss", title="Training loss",
                               height=260, elem_id="train-loss")
            tail = gr.Textbox(label="Log", lines=6, max_lines=15, interactive=False, autoscroll=True)
            adapter = gr.Textbox(label="Adapter", interactive=False)
            load_in_chat = gr.Button("Load this adapter in the Chat tab", interactive=False)

    def show(name_: str | None):
        view = run_status(name_)
        return view.text, view.loss, view.tail, view.adapter, gr.update(interactive=bool(view.adapter))

    def begin(data_, base_, name_, epochs_, lr_, max_steps_, rank_, alpha_, batch_, cutoff_, prompt_) -> str:
        settings = {"epochs": epochs_, "lr": lr_, "max-steps": int(max_steps_), "lora-r": int(rank_),
                    "lora-alpha": int(alpha_), "batch-size": int(batch_), "cutoff": int(cutoff_)}
        if prompt_ != AUTO:
            settings["prompt"] = prompt_
        return start_run((name_ or "").strip(), (data_ or "").strip(), (base_ or "embedded").strip(), settings)

    def on_load():
        runs = RUNS.names()
        return gr.update(choices=runs, value=runs[0] if runs else None), gr.update(choices=datasets_choices())

    count.click(lambda d, b, p, e, c: preview((d or "").strip(), (b or "").strip(), p, e, c),
                [data, base, prompt, epochs, cutoff], stats, api_name="train_preview")
    wire(RUNS, "train", begin, [data, base, name, epochs, lr, max_steps, rank, alpha, batch, cutoff, prompt], show,
         [status, loss, tail, adapter, load_in_chat], run=run, start=start, stop=stop)
    return TrainTab(adapter, load_in_chat, (on_load, None, [run, data]))
