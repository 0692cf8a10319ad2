"""ToolACE-R in the launched app, through gradio_client: the Train tab's selection run (table, plot, stop reason),
the Evaluate tab's BFCL accordion (refine modes side by side) and the Chat tab's self-refine switch."""
from __future__ import annotations

import time

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from app import build_app
from conftest import free_port
from scripted import ScriptedController
from training.data.records import GoldStep, Record, Source, save_jsonl
from training.data.review_store import ReviewStore
from visual_tools import ToolRegistry

EDGES = "Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\nAction Input: image/1a2b3c4d.png"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toolace-ui")
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController([EDGES, "Thought: Do I need to use a tool? No\nAI: done"]))
    demo = build_app(ToolRegistry.from_load("Image2Canny_cpu"), pool, review_store=ReviewStore(folder / "r.sqlite"))
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/", folder
    demo.close()


def records(folder) -> str:
    recs = [Record(id=f"r{i}", image_name="image/1a2b3c4d.png", tools=["Edge Detection On Image"],
                   instruction=f"Find the edges ({i})", answer=None, source=Source(teacher="test"),
                   steps=[GoldStep(tool="Edge Detection On Image", args=["image/1a2b3c4d.png"], observation="x")])
            for i in range(5)]
    return str(save_jsonl(recs, folder / "records.jsonl"))


def test_train_tab_runs_selection_and_shows_each_iteration(app, tiny_llama):
    url, folder = app
    client = Client(url, verbose=False)
    data = records(folder)
    with pytest.raises(AppError, match="alpha < beta"):
        client.predict(data, str(tiny_llama), "bad", 2, 0.9, 0.5, 2, 0, 1, 1, "python", "", 0,
                       api_name="/toolace_start")
    with pytest.raises(AppError, match="no such data file"):
        client.predict(str(folder / "missing.jsonl"), str(tiny_llama), "bad", 2, 0, 0.9, 2, 0, 1, 1, "python", "", 0,
                       api_name="/toolace_start")
    with pytest.raises(AppError, match="no adapter in"):
        client.predict(data, str(tiny_llama), "bad", 2, 0, 0.9, 2, 0, 1, 1, "gpt4tools", str(folder), 0,
                       api_name="/toolace_start")
    client.predict(data, str(tiny_llama), "sel-1", 2, 0, 0.9, 2, 0, 1, 1, "python", "", 0,
                   api_name="/toolace_start")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        text, table, plot, adapter, tail = client.predict("sel-1", api_name="/toolace_status")
        if ": finished" in text:
            break
        assert ": failed" not in text, (text, tail)
        time.sleep(1)
    assert ": finished" in text, text
    # the untrained tiny model never writes a call: every sample has D = 1, so nothing lies in 0 < D < 0.9
    assert "| 0 | 4 | – | – | 0.0 | 0.0 |" in table and "| 1 | 4 | 0 | 1.0 |" in table
    assert "nothing to train on" in table and adapter == ""
    assert sorted(tuple(row) for row in plot["data"]) == [(0, 0.0, "dev score (mean O, %)"), (1, 0, "kept samples")]


def test_bfcl_accordion_scores_each_refine_mode(app, tiny_llama):
    client = Client(app[0], verbose=False)
    text = client.predict(str(tiny_llama), "", ["simple_python", "irrelevance"], 2, ["none", "adaptive"], 2,
                          api_name="/bfcl_evaluate")
    assert "| refine none | simple_python | 2 |" in text and "| refine adaptive | irrelevance | 2 |" in text
    assert "except in irrelevance" in text
    with pytest.raises(AppError, match="not in the list of choices"):  # multi-turn is not offered
        client.predict(str(tiny_llama), "", ["multi_turn_base"], 2, ["none"], 2, api_name="/bfcl_evaluate")
    with pytest.raises(AppError, match="at least one category"):
        client.predict(str(tiny_llama), "", ["simple_python"], 2, [], 2, api_name="/bfcl_evaluate")


def test_chat_self_refine_switch_refines_each_step(app):
    client = Client(app[0], verbose=False)
    client.predict(True, api_name="/set_refine")
    client.predict({"text": "find the edges", "files": []}, api_name="/add_message")
    messages = client.predict(api_name="/respond")
    refine = [m for m in messages if "self-refine" in (m.get("metadata") or {}).get("title", "")]
    assert refine and refine[-1]["content"][0]["text"].startswith("refine rounds per step:")
