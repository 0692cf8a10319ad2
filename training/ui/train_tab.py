"""The Train tab: LoRA training as a subprocess that writes a JSONL log; progress, loss plot, Stop, load in Chat.

Everything about a run lives in its folder (`$TOOLSMITH_HOME/runs/<name>`): the command, the process id,
the log and the adapter. The tab only reads that folder, so it picks a run up again after a page refresh
or an app restart.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from visual_tools import data_home

from ..sft import ADAPTER_DIR, LOG_FILE, STOP_FILE

ROOT = Path(__file__).resolve().parents[2]
RUN_NAME = re.compile(r"[\w-][\w.-]{0,63}")


def runs_dir(kind: str = "runs") -> Path:
    """Where runs of a kind live: `runs` (LoRA) or `toolformer`, under the data folder."""
    path = data_home() / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def list_runs(kind: str = "runs") -> list[str]:
    """Run names, newest first (a run is a folder with its command.json)."""
    return [p.name for p in sorted(runs_dir(kind).iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
            if (p / "command.json").is_file()]


def datasets_choices() -> list[str]:
    folder = data_home() / "datasets"
    files = sorted(str(p) for p in folder.glob("*.jsonl") if not p.name.endswith(".raw.jsonl")) \
        if folder.is_dir() else []
    return ["review:accepted", *files]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a finished child that nobody waited for is a zombie: not running
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def read_events(path: Path) -> list[dict]:
    """A run's JSONL log (empty before the process writes it)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def new_run(kind: str, name: str, state: Callable[[str], str]) -> Path:
    """A fresh run folder of a kind; refused for a bad or taken name, or while another run of it is running."""
    if not RUN_NAME.fullmatch(name or "") or name.startswith("."):
        raise ValueError("the run name may use letters, digits, '.', '_' and '-' only")
    active = [r for r in list_runs(kind) if state(r) == "running"]
    if active:
        raise ValueError(f"run '{active[0]}' is still running; stop it first")
    run = runs_dir(kind) / name
    if run.exists():
        raise ValueError(f"run '{name}' exists already; choose another name")
    run.mkdir(parents=True)
    return run


def launch(run: Path, command: list[str]) -> None:
    """Start a run's command in its own process group, logging to `output.log`; the folder keeps the command
    and the process id, which is all the tabs read back. `TOOLSMITH_RUN_THREADS` caps the run's CPU threads:
    two torch processes that each take every core slow each other down far more than twice."""
    (run / "command.json").write_text(json.dumps(command))
    env = dict(os.environ)
    if os.environ.get("TOOLSMITH_RUN_THREADS"):
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = os.environ["TOOLSMITH_RUN_THREADS"]
    with (run / "output.log").open("w") as output:
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=env)
    (run / "pid").write_text(str(process.pid))


def process_state(run: Path, finished: bool) -> str:
    """finished / stopped (by the Stop button) / running / failed, for a run launched with `launch`."""
    pid = int((run / "pid").read_text()) if (run / "pid").is_file() else 0
    if finished:
        return "finished"
    if (run / "STOPPED").exists():
        return "stopped"
    return "running" if pid and _alive(pid) else "failed"


def stop_process(run: Path) -> None:
    (run / "STOPPED").touch()
    os.killpg(int((run / "pid").read_text()), signal.SIGTERM)


def output_of(run: Path) -> str:
    return (run / "output.log").read_text(errors="replace") if (run / "output.log").is_file() else ""


def failure(output: str, default: str = "the process ended early") -> str:
    """The last error line of a run's output."""
    errors = [line for line in output.splitlines() if line.startswith("error:") or "Error" in line]
    return errors[-1] if errors else default


def progress_bar(done: int, total: int) -> str:
    return f'<progress value="{done}" max="{total}" style="width:100%"></progress>'


def run_status(name: str | None) -> dict[str, Any]:
    """What a run is doing: state, progress, loss curve, log tail, adapter; read from its folder only."""
    if not name or not RUN_NAME.fullmatch(name) or not (runs_dir() / name / "command.json").is_file():
        return {"state": "none", "text": "No run selected.", "loss": pd.DataFrame({"step": [], "loss": []}),
                "tail": "", "adapter": ""}
    run = runs_dir() / name
    events = [json.loads(line) for line in (run / LOG_FILE).read_text().splitlines() if line.strip()] \
        if (run / LOG_FILE).is_file() else []
    logs = [e for e in events if e.get("event") == "log" and "loss" in e]
    done = next((e for e in events if e.get("event") == "done"), None)
    pid = int((run / "pid").read_text()) if (run / "pid").is_file() else 0
    output = (run / "output.log").read_text(errors="replace") if (run / "output.log").is_file() else ""
    if done:
        state = "stopped" if (run / STOP_FILE).exists() else "finished"
    elif pid and _alive(pid):
        state = "stopping" if (run / STOP_FILE).exists() else "running"
    else:
        state = "failed"
    last = logs[-1] if logs else {}
    step, total = last.get("step", 0), last.get("max_steps") or next(
        (e["max_steps"] for e in events if e.get("event") == "start"), 0)
    eta = last.get("eta")
    text = f"**{name}**: {state}"
    if total:
        text = (f'<progress value="{step}" max="{total}" style="width:100%"></progress>\n\n{text}'
                f" · step {step} / {total} ({100 * step / total:.0f} %)")
    if state == "running" and eta is not None:
        text += f" · ETA {int(eta) // 60} min {int(eta) % 60} s"
    if last.get("loss") is not None:
        text += f" · loss {last['loss']:.4f}"
    if state == "failed":
        errors = [line for line in output.splitlines() if line.startswith("error:") or "Error" in line]
        text += f" · {errors[-1] if errors else 'the process ended without saving an adapter'}"
    adapter = str(run / ADAPTER_DIR) if (run / ADAPTER_DIR / "adapter_config.json").is_file() else ""
    return {"state": state, "text": text, "adapter": adapter,
            "loss": pd.DataFrame({"step": [e["step"] for e in logs], "loss": [e["loss"] for e in logs]}),
            "tail": "\n".join(output.splitlines()[-15:])}


def start_run(name: str, data: str, base: str, settings: dict[str, float]) -> Path:
    """Launch `python -m training train` in its own process group; refuses a second active run."""
    if not RUN_NAME.fullmatch(name or "") or name.startswith("."):
        raise ValueError("the run name may use letters, digits, '.', '_' and '-' only")
    if not data:
        raise ValueError("choose the training data")
    active = [r for r in list_runs() if run_status(r)["state"] in ("running", "stopping")]
    if active:
        raise ValueError(f"run '{active[0]}' is still training; stop it first")
    run = runs_dir() / name
    if (run / ADAPTER_DIR).exists():
        raise ValueError(f"run '{name}' already has an adapter; choose another name")
    run.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "training", "train", "--data", data, "--base", base, "--out", str(run)]
    for flag, value in settings.items():
        command += [f"--{flag}", str(value)]
    if (run / "checkpoints").is_dir():
        command.append("--resume")  # a run that was interrupted continues where it was
    (run / "command.json").write_text(json.dumps(command))
    (run / STOP_FILE).unlink(missing_ok=True)
    with (run / "output.log").open("w") as output:
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    (run / "pid").write_text(str(process.pid))
    return run


def build_train_tab() -> dict[str, Any]:
    """Build the Train tab inside the current gr.Blocks; returns its components by name."""
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
            with gr.Row():
                start = gr.Button("Start", variant="primary")
                stop = gr.Button("Stop", variant="stop")
        with gr.Column(scale=3):
            run = gr.Dropdown(list_runs(), label="Run", allow_custom_value=True)
            status = gr.Markdown("No run selected.")
            loss = gr.LinePlot(pd.DataFrame({"step": [], "loss": []}), x="step", y="loss", title="Training loss",
                               height=260, elem_id="train-loss")
            tail = gr.Textbox(label="Log", lines=6, max_lines=15, interactive=False, autoscroll=True)
            adapter = gr.Textbox(label="Adapter", interactive=False)
            load_in_chat = gr.Button("Load this adapter in the Chat tab", interactive=False)
    timer = gr.Timer(2.0)

    def show(name_: str | None):
        info = run_status(name_)
        return (info["text"], info["loss"], info["tail"], info["adapter"],
                gr.update(interactive=bool(info["adapter"])))

    def on_start(data_, base_, name_, epochs_, lr_, max_steps_, rank_, alpha_, batch_, cutoff_):
        settings = {"epochs": epochs_, "lr": lr_, "max-steps": int(max_steps_), "lora-r": int(rank_),
                    "lora-alpha": int(alpha_), "batch-size": int(batch_), "cutoff": int(cutoff_)}
        try:
            started = start_run((name_ or "").strip(), (data_ or "").strip(), (base_ or "embedded").strip(), settings)
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return gr.update(choices=list_runs(), value=started.name), *show(started.name)

    def on_stop(name_: str | None):
        if not name_ or run_status(name_)["state"] != "running":
            raise gr.Error("No running run selected.")
        (runs_dir() / name_ / STOP_FILE).touch()  # the trainer stops after this step and saves the adapter
        return show(name_)

    def on_load():
        runs = list_runs()
        return gr.update(choices=runs, value=runs[0] if runs else None), gr.update(choices=datasets_choices())

    outputs = [status, loss, tail, adapter, load_in_chat]
    start.click(on_start, [data, base, name, epochs, lr, max_steps, rank, alpha, batch, cutoff], [run, *outputs],
                api_name="train_start")
    stop.click(on_stop, run, outputs, api_name="train_stop")
    run.change(show, run, outputs, api_name="train_status")
    timer.tick(show, run, outputs, api_visibility="private")
    return {"data": data, "base": base, "name": name, "start": start, "stop": stop, "run": run, "status": status,
            "loss": loss, "adapter": adapter, "load_in_chat": load_in_chat, "timer": timer,
            "on_load": (on_load, None, [run, data])}
