"""The Train tab's one runner (training/ui/runs.py): a run's states, read back from its folder only."""
import sys
import time

import pytest

from training.ui.runs import RunKind

# a run that logs one event a second until it has written `done` (or forever with n = 0), and leaves when STOP appears
SCRIPT = """
import json, pathlib, sys, time
run, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
with (run / "events.jsonl").open("a") as log:
    for i in range(n or 10**6):
        if (run / "STOP").exists():
            break
        print(json.dumps({"event": "log", "step": i}), file=log, flush=True)
        time.sleep(0.2)
    print(json.dumps({"event": "done"}), file=log, flush=True)
"""


def until(kind: RunKind, name: str, states: tuple[str, ...], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while (state := kind.get(name).state) not in states and time.monotonic() < deadline:
        time.sleep(0.1)
    return state


@pytest.fixture
def kinds(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSMITH_HOME", str(tmp_path))
    return RunKind("graceful", "events.jsonl", graceful=True), RunKind("killed", "events.jsonl")


def command(n: int):
    return lambda run: [sys.executable, "-c", SCRIPT, str(run), str(n)]


def test_a_run_finishes_and_its_events_are_read_back(kinds):
    kind, _ = kinds
    kind.start("short", command(3))
    assert until(kind, "short", ("finished",)) == "finished"
    run = kind.get("short")
    assert [e["event"] for e in run.events] == ["log", "log", "log", "done"]
    assert run.headline(" · step 3 / 3", 3, 3).startswith('<progress value="3" max="3"')
    assert kind.names() == ["short"] and kind.get("../short") is None and kind.get("missing") is None


def test_one_active_run_per_kind_and_names_are_checked(kinds):
    kind, other = kinds
    kind.start("long", command(0))
    with pytest.raises(ValueError, match="still running"):
        kind.start("second", command(1))
    other.start("elsewhere", command(0))  # another kind runs beside it
    for bad in ("../x", ".hidden", "", "a b"):
        with pytest.raises(ValueError, match="letters, digits"):
            other.start(bad, command(1))
    kind.stop("long")
    other.stop("elsewhere")
    assert until(kind, "long", ("stopped",)) == "stopped"
    with pytest.raises(ValueError, match="exists already"):
        kind.start("long", command(1))
    with pytest.raises(ValueError, match="no running run"):
        kind.stop("long")


def test_a_graceful_stop_lets_the_process_finish_and_a_hard_one_ends_it(kinds):
    graceful, killed = kinds
    graceful.start("g", command(0))
    killed.start("k", command(0))
    for kind, name in ((graceful, "g"), (killed, "k")):
        assert until(kind, name, ("running",)) == "running"
    assert killed.stop("k").state == "stopped"  # SIGTERM: no `done` event, yet stopped, not failed
    assert not any(e["event"] == "done" for e in killed.get("k").events)
    graceful.stop("g")  # the process sees STOP, writes `done` and leaves
    assert until(graceful, "g", ("stopped",)) == "stopped"
    assert graceful.get("g").events[-1] == {"event": "done"}


def test_a_graceful_run_that_dies_after_stop_without_done_failed(kinds):
    graceful, _ = kinds
    graceful.start("dies", lambda run: [sys.executable, "-c", "import time; time.sleep(1); raise MemoryError"])
    assert graceful.stop("dies").state == "stopping"
    assert until(graceful, "dies", ("failed", "stopped")) == "failed"  # no adapter was saved: not "stopped"


def test_a_run_that_dies_is_failed_with_its_error_line(kinds):
    kind, _ = kinds
    kind.start("broken", lambda run: [sys.executable, "-c", "raise ValueError('no valid training examples')"])
    assert until(kind, "broken", ("failed",)) == "failed"
    assert kind.get("broken").headline().endswith("ValueError: no valid training examples")
