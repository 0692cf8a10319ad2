"""The Train tab's runs: one subprocess per run, everything about it in its folder.

A run of a kind lives in `$TOOLSMITH_HOME/<kind>/<name>`: `command.json`, `pid`, `output.log` (stdout and stderr),
the JSONL of events its process writes, and `STOP` once Stop was pressed. The sections only read that folder, so
they pick a run up again after a page refresh or an app restart. LoRA, ToolACE-R and Toolformer runs share this
code; each section adds only its command and how it shows progress.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from visual_tools import data_home

from ..tuning.run_files import STOP_FILE

ROOT = Path(__file__).resolve().parents[2]
RUN_NAME = re.compile(r"[\w-][\w.-]{0,63}")
ACTIVE = ("running", "stopping")


def read_events(path: Path) -> list[dict]:
    """A JSONL log (empty before the process writes it)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def progress_bar(done: int, total: int) -> str:
    return f'<progress value="{done}" max="{total}" style="width:100%"></progress>'


def datasets_choices() -> list[str]:
    """The review store's accepted records and every dataset in the data folder."""
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


@dataclass(frozen=True)
class Run:
    """One run as read from its folder."""

    name: str
    path: Path
    state: str  # running / stopping / finished / stopped / failed
    events: list[dict]
    output: str

    def tail(self, lines: int = 12) -> str:
        return "\n".join(self.output.splitlines()[-lines:])

    def failure(self, default: str = "the process ended early") -> str:
        """The last error line of the run's output."""
        errors = [line for line in self.output.splitlines() if line.startswith("error:") or "Error" in line]
        return errors[-1] if errors else default

    def headline(self, detail: str = "", done: int = 0, total: int = 0, failed: str = "the process ended early") -> str:
        """`name: state` + the section's detail, a progress bar above it when there is a total, and the error
        line when the run failed."""
        text = f"**{self.name}**: {self.state}{detail}"
        if total:
            text = f"{progress_bar(done, total)}\n\n{text}"
        return text + (f" · {self.failure(failed)}" if self.state == "failed" else "")


@dataclass(frozen=True)
class RunKind:
    """Where runs of one kind live and which JSONL their process writes; `graceful`: the process stops itself
    when `STOP` appears (the trainer saves its adapter first), else Stop ends its process group; `doing`: what a
    run does, for the message that refuses a second one."""

    folder: str
    log: str
    graceful: bool = False
    doing: str = "running"

    def home(self) -> Path:
        path = data_home() / self.folder
        path.mkdir(parents=True, exist_ok=True)
        return path

    def names(self) -> list[str]:
        """Run names, newest first (a run is a folder with its command.json)."""
        return [p.name for p in sorted(self.home().iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
                if (p / "command.json").is_file()]

    def get(self, name: str | None) -> Run | None:
        """The run of that name, or None for no name, a bad one or a folder that holds no run."""
        if not name or not RUN_NAME.fullmatch(name) or not (self.home() / name / "command.json").is_file():
            return None
        path = self.home() / name
        events = read_events(path / self.log)
        output = (path / "output.log").read_text(errors="replace") if (path / "output.log").is_file() else ""
        pid = int((path / "pid").read_text()) if (path / "pid").is_file() else 0
        stop = (path / STOP_FILE).exists() or (path / "STOPPED").exists()  # STOPPED: the marker of older runs
        if any(e.get("event") == "done" for e in events):
            state = "stopped" if stop else "finished"
        elif pid and _alive(pid):
            state = "stopping" if stop else "running"
        else:  # a graceful run ends by writing `done`: one that died without it failed, Stop or not
            state = "stopped" if stop and not self.graceful else "failed"
        return Run(name, path, state, events, output)

    def start(self, name: str, command: Callable[[Path], list[str]], reuse: bool = False) -> Path:
        """Make the run's folder and launch `command(folder)` in it. Refused for a bad name, a taken one (unless
        `reuse`: the trainer resumes an interrupted run) or while another run of this kind is active."""
        if not RUN_NAME.fullmatch(name or "") or name.startswith("."):
            raise ValueError("the run name may use letters, digits, '.', '_' and '-' only")
        active = [r for r in self.names() if self.get(r).state in ACTIVE]
        if active:
            raise ValueError(f"run '{active[0]}' is still {self.doing}; stop it first")
        path = self.home() / name
        if path.exists() and not reuse:
            raise ValueError(f"run '{name}' exists already; choose another name")
        path.mkdir(parents=True, exist_ok=True)
        launch(path, command(path))
        return path

    def stop(self, name: str | None) -> Run:
        """Ask a running run to stop; a run without a graceful stop is ended (its group gets SIGTERM)."""
        run = self.get(name)
        if run is None or run.state != "running":
            raise ValueError("no running run selected")
        (run.path / STOP_FILE).touch()
        if not self.graceful:
            pid = int((run.path / "pid").read_text())
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:  # it ended meanwhile
                pass
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
        return self.get(name)


def launch(run: Path, command: list[str]) -> None:
    """Start a run's command in its own process group, logging to `output.log`; the folder keeps the command
    and the process id, which is all the sections read back. `TOOLSMITH_RUN_THREADS` caps the run's CPU threads:
    two torch processes that each take every core slow each other down far more than twice."""
    (run / "command.json").write_text(json.dumps(command))
    (run / STOP_FILE).unlink(missing_ok=True)
    env = dict(os.environ)
    if os.environ.get("TOOLSMITH_RUN_THREADS"):
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = os.environ["TOOLSMITH_RUN_THREADS"]
    with (run / "output.log").open("w") as output:
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=env)
    (run / "pid").write_text(str(process.pid))


def wire(runs: RunKind, api: str, begin: Callable[..., str], inputs: list, show: Callable[[str | None], tuple],
         outputs: list, *, run: gr.Dropdown, start: gr.Button, stop: gr.Button) -> None:
    """The events every section has: Start (`begin(*inputs)` launches and names the run), Stop, picking a run,
    and a timer that refreshes what `show` shows of it. A refused start or stop is said in an error toast."""
    def on_start(*values):
        try:
            name = begin(*values)
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return gr.update(choices=runs.names(), value=name), *show(name)

    def on_stop(name: str | None):
        try:
            runs.stop(name)
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return show(name)

    start.click(on_start, inputs, [run, *outputs], api_name=f"{api}_start")
    stop.click(on_stop, run, outputs, api_name=f"{api}_stop")
    run.change(show, run, outputs, api_name=f"{api}_status")
    gr.Timer(2.0).tick(show, run, outputs, api_visibility="private")
