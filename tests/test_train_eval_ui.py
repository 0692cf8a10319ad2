"""The Train and Evaluate tabs against the launched app: a tiny LoRA run, Stop, refresh, evaluation, Load in Chat."""
import json
import sys
import time
from pathlib import Path

import pytest
from gradio_client import Client

from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from app import build_app
from conftest import chromium_page, free_port, needs_chromium
from scripted import ScriptedController
from training.data.records import GoldStep, Record, Source, save_jsonl
from training.data.review_store import ReviewStore
from visual_tools import ToolRegistry

EDGE = "image/bbbbbbbb_edge_aaaaaaaa_aaaaaaaa.png"


def dataset(folder: Path) -> Path:
    rows = [Record(id=f"r{i}", image_name="image/aaaaaaaa.png", tools=["Edge Detection On Image"],
                   instruction=f"edges {i}", answer=f"Here: {EDGE}", source=Source(teacher="test"),
                   steps=[GoldStep(tool="Edge Detection On Image", args=["image/aaaaaaaa.png"], observation=EDGE)])
            for i in range(4)]
    return save_jsonl(rows, folder / "train.jsonl")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train-ui")
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController(["Thought: Do I need to use a tool? No\nAI: hello"]))
    demo = build_app(ToolRegistry.from_load("Image2Canny_cpu"), pool, review_store=ReviewStore(folder / "r.sqlite"))
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/", dataset(folder)
    demo.close()


def wait_for(client: Client, run: str, states: tuple[str, ...], timeout: float = 300) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.predict(run, api_name="/train_status")
        if any(f": {state}" in status[0] for state in states):
            return status
        time.sleep(1)
    raise AssertionError(f"run {run} never reached {states}: {status[0]}")


def start(client: Client, data: Path, base: Path, name: str, max_steps: int, prompt: str = "auto") -> None:
    client.predict(str(data), str(base), name, 3, 5e-3, max_steps, 16, 16, 2, 100000, prompt,
                   api_name="/train_start")


def test_train_then_evaluate_the_adapter(app, tiny_llama, tmp_path):
    url, data = app
    client = Client(url, verbose=False)
    preview = client.predict(str(data), str(tiny_llama), "compact", 3, 100000, api_name="/train_preview")
    assert "**4 records** → 4 training sequences (`compact` prompt)" in preview and "min** for 3 epoch" in preview
    start(client, data, tiny_llama, "tiny-ui", 12, "compact")
    with pytest.raises(Exception, match="still training"):
        start(client, data, tiny_llama, "second", 12)  # one run at a time
    text, plot, tail, adapter = wait_for(client, "tiny-ui", ("finished", "failed"))
    assert ": finished" in text and "step 12 / 12" in text, (text, tail)
    assert adapter.endswith("tiny-ui/adapter")
    assert json.loads((Path(adapter) / "toolsmith.json").read_text())["prompt"] == "compact"
    assert [row[0] for row in plot["data"]] == list(range(1, 13))  # one loss point per step
    # a new page (another session) finds the run where it is: state is on disk, not in the page
    fresh = Client(url, verbose=False)
    assert ": finished" in fresh.predict("tiny-ui", api_name="/train_status")[0]

    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c", "image": "cat.png", "input": "edges please",
                                 "tools": ["Edge Detection On Image"],
                                 "gold": [{"tool": "Edge Detection On Image", "args": ["cat.png"]}]}) + "\n")
    table, chart, predictions, files = client.predict(str(cases), None, str(tiny_llama), adapter, "", 0, False,
                                                      True, 0, api_name="/evaluate")
    assert "| overall | 1 |" in table and "tiny-ui/adapter" in table
    assert (Path(adapter) / "retriever" / "retriever.json").is_file()  # the run's shortlist classifier, beside it
    table, *_ = client.predict(str(cases), None, str(tiny_llama), adapter, "", 0, False, False, 3,
                               api_name="/evaluate")  # unconstrained, up to 3 tools offered by the run's classifier
    assert "| overall | 1 |" in table
    assert predictions["data"][0][0] == "c" and len(files) == 3
    with pytest.raises(Exception, match="no such file"):
        client.predict(str(tmp_path / "missing.jsonl"), None, "embedded", "", "", 0, False, True, 0,
                       api_name="/evaluate")


def test_stop_saves_the_adapter(app, tiny_llama):
    url, data = app
    client = Client(url, verbose=False)
    start(client, data, tiny_llama, "to-stop", 100000)
    wait_for(client, "to-stop", ("running",))
    deadline = time.monotonic() + 120
    while "step" not in client.predict("to-stop", api_name="/train_status")[0] and time.monotonic() < deadline:
        time.sleep(0.5)
    client.predict("to-stop", api_name="/train_stop")
    text, _, _, adapter = wait_for(client, "to-stop", ("stopped", "failed"))
    assert ": stopped" in text and adapter


def test_a_run_that_cannot_start_says_why(app, tmp_path):
    url, _ = app
    client = Client(url, verbose=False)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "no such data file" in client.predict(str(tmp_path / "nothing.jsonl"), "embedded", "auto", 1, 512,
                                                 api_name="/train_preview")
    client.predict(str(empty), "embedded", "bad-run", 1, 3e-4, 1, 16, 16, 1, 512, "auto", api_name="/train_start")
    text = wait_for(client, "bad-run", ("failed",))[0]
    assert "no valid training examples" in text
    with pytest.raises(Exception, match="letters, digits"):
        client.predict(str(empty), "embedded", "../escape", 1, 3e-4, 1, 16, 16, 1, 512, "auto",
                       api_name="/train_start")


@needs_chromium
def test_load_the_trained_adapter_in_chat_in_a_browser(app, tiny_llama, tmp_path):
    from playwright.sync_api import expect
    url, data = app
    client = Client(url, verbose=False)
    if ": finished" not in client.predict("tiny-ui", api_name="/train_status")[0]:
        start(client, data, tiny_llama, "tiny-ui", 12)
        wait_for(client, "tiny-ui", ("finished",))
    with chromium_page(tmp_path) as page:
        page.goto(url)
        page.get_by_role("tab", name="Train").click()
        page.get_by_label("Run", exact=True).click()
        page.get_by_role("option", name="tiny-ui").click()
        expect(page.get_by_text("tiny-ui: finished")).to_be_visible(timeout=30000)
        expect(page.locator("progress")).to_have_attribute("value", "12")  # the progress bar
        page.get_by_role("button", name="Load this adapter in the Chat tab").click()
        expect(page.get_by_text("tiny-ui/adapter").first).to_be_visible(timeout=60000)
        expect(page.get_by_text("Using", exact=False).first).to_contain_text("tiny-ui/adapter", timeout=60000)


def test_a_run_takes_its_thread_cap_from_the_setting(tmp_path, monkeypatch):
    from training.ui.runs import launch
    monkeypatch.setenv("TOOLSMITH_RUN_THREADS", "1")
    launch(tmp_path, [sys.executable, "-c", "import os, torch; print(os.environ['OMP_NUM_THREADS'], "
                                            "torch.get_num_threads())"])
    deadline = time.monotonic() + 120
    while len((tmp_path / "output.log").read_text().split()) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (tmp_path / "output.log").read_text().split() == ["1", "1"]
