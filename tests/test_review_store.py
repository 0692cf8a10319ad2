"""The SQLite review store: decisions, conflicts between reviewers, undo, export, and surviving a kill."""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import free_port
from training.data.records import GoldStep, Record, Source, load_jsonl
from training.data.review_store import Filters, ReviewConflict, ReviewStore

ROOT = Path(__file__).resolve().parent.parent


def make_records(n: int = 6) -> list[Record]:
    tools = ["Edge Detection On Image", "Crop Image"]
    return [Record(id=f"r{i}", image=str(ROOT / "assets" / "chelsea.png"), image_name="image/0000000a.png",
                   tools=tools, instruction=f"instruction {i}", kind="negative" if i == 5 else "positive",
                   steps=[] if i == 5 else [GoldStep(tool=tools[i % 2], args=["image/0000000a.png"]
                                                     + (["[0, 0, 10, 10]"] if i % 2 else []))],
                   answer="done", source=Source(teacher="template" if i < 4 else "gpt")) for i in range(n)]


@pytest.fixture
def store(tmp_path) -> ReviewStore:
    s = ReviewStore(tmp_path / "review.sqlite")
    assert s.add(make_records()) == 6
    return s


def test_wal_mode_and_idempotent_add(store):
    import sqlite3
    assert sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.add(make_records()) == 0
    assert store.counts() == {"pending": 6, "accepted": 0, "rejected": 0, "total": 6}


def test_decisions_edits_keep_the_original_and_filters(store):
    item = store.next(Filters())
    assert item.record.id == "r0"
    store.decide("r0", item.version, "accept", "ann")
    edited = store.get("r1").record.model_copy(update={"instruction": "crop the cat's face"})
    after = store.decide("r1", 0, "edit", "ann", edited=edited)
    assert after.record.instruction == "crop the cat's face" and after.record.status == "accepted"
    assert Record.model_validate_json(after.record.original).instruction == "instruction 1"
    with pytest.raises(ValueError, match="why"):
        store.decide("r2", 0, "reject", "ann")
    store.decide("r2", 0, "reject", "ann", reason="wrong tool")
    assert store.get("r2").record.reason == "wrong tool" and store.get("r2").record.reviewer == "ann"
    with pytest.raises(ValueError, match="name"):
        store.decide("r3", 0, "accept", "  ")
    assert store.next(Filters(), after="r2").record.id == "r3"  # pending ones, in order
    assert store.next(Filters(status=None, tool="Crop Image")).record.id == "r1"
    assert store.next(Filters(kind="negative")).record.id == "r5"
    assert store.next(Filters(teacher="gpt")).record.id == "r4"
    assert store.next(Filters(status="rejected")).record.id == "r2"
    assert store.counts() == {"pending": 3, "accepted": 2, "rejected": 1, "total": 6}


def test_second_reviewer_is_refused_not_overwritten(store):
    seen_by_bob = store.get("r0")
    store.decide("r0", store.get("r0").version, "accept", "ann")
    with pytest.raises(ReviewConflict, match="ann marked it accepted"):
        store.decide("r0", seen_by_bob.version, "reject", "bob", reason="no")
    assert store.get("r0").record.status == "accepted" and store.get("r0").record.reviewer == "ann"


def test_simultaneous_decisions_one_wins(store):
    results, barrier = [], threading.Barrier(8)

    def decide(name: str) -> None:
        barrier.wait()
        try:
            store.decide("r3", 0, "accept", name)
            results.append(name)
        except ReviewConflict:
            results.append("refused")

    threads = [threading.Thread(target=decide, args=(f"r{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if r != "refused"]
    assert len(winners) == 1 and store.get("r3").record.reviewer == winners[0]


def test_undo_takes_back_the_last_decisions_in_order(store):
    store.decide("r0", 0, "accept", "ann")
    store.decide("r1", 0, "reject", "ann", reason="bad")
    assert store.undo("ann").record.id == "r1"
    assert store.undo("ann").record.id == "r0"
    assert store.counts()["pending"] == 6
    with pytest.raises(ValueError, match="nothing to undo"):
        store.undo("ann")
    store.decide("r0", store.get("r0").version, "accept", "ann")
    store.decide("r0", store.get("r0").version, "reject", "bob", reason="changed my mind")
    with pytest.raises(ReviewConflict):
        store.undo("ann")  # bob decided it since: ann's undo would overwrite bob


def test_export_accepted_or_all(store, tmp_path):
    store.decide("r0", 0, "accept", "ann")
    store.decide("r1", 0, "reject", "ann", reason="bad")
    assert store.export(tmp_path / "accepted.jsonl") == 1
    assert [r.id for r in load_jsonl(tmp_path / "accepted.jsonl").records] == ["r0"]
    assert store.export(tmp_path / "all.jsonl", status=None) == 6
    statuses = {r.id: r.status for r in load_jsonl(tmp_path / "all.jsonl").records}
    assert statuses["r0"] == "accepted" and statuses["r1"] == "rejected" and statuses["r2"] == "pending"


def test_cli_review_export(store, tmp_path):
    store.decide("r0", 0, "accept", "ann")
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "training", "review", "export", "--status", "accepted",
                           "--out", str(out), "--db", str(store.path)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "wrote 1 records" in done.stdout and [r.id for r in load_jsonl(out).records] == ["r0"]


def _launch(home: Path, controller: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "TOOLSMITH_HOME": str(home), "GRADIO_ANALYTICS_ENABLED": "False"}
    return subprocess.Popen([sys.executable, "app.py", "--controller", str(controller), "--load", "Image2Canny_cpu",
                             "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _client(url: str, proc: subprocess.Popen):
    from gradio_client import Client
    deadline = time.monotonic() + 120
    while True:
        try:
            return Client(url, verbose=False)
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the app did not start")
            time.sleep(0.5)


def test_decisions_survive_killing_the_app(tmp_path, tiny_llama):
    home = tmp_path / "home"
    ReviewStore(home / "review.sqlite").add(make_records())
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = _launch(home, tiny_llama, port)
    try:
        client = _client(url, proc)
        client.predict("pending", "all", "all", "all", api_name="/review_refresh")
        for _ in range(3):
            client.predict("ann", "pending", "all", "all", "all", api_name="/review_accept")
        client.predict("ann", "no tool needed", "pending", "all", "all", "all", api_name="/review_reject")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no shutdown, no flush: a crash
        proc.wait(30)
    store = ReviewStore(home / "review.sqlite")
    assert store.counts() == {"pending": 2, "accepted": 3, "rejected": 1, "total": 6}
    proc = _launch(home, tiny_llama, port)  # and the restarted app serves them
    try:
        client = _client(url, proc)
        view = client.predict("accepted", "all", "all", "all", api_name="/review_refresh")
        assert "**4 / 6 reviewed**" in view[-1] and "status **accepted** by ann" in view[4]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
