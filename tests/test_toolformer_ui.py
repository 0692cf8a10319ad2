"""Toolformer in the launched app: the Chat tab's mode, the Train tab's pipeline run (progress, kept calls,
candidates, results, Stop) and the Evaluate tab's math table, all driven through gradio_client."""
from __future__ import annotations

import time

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from tiny_models import teach_tiny_llama

from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from app import build_app
from conftest import free_port
from scripted import ScriptedController
from training.data.review_store import ReviewStore
from training.toolformer.evaluate import SVAMP
from training.ui.toolformer_tab import SYNTHETIC
from visual_tools import ToolRegistry


@pytest.fixture(scope="module")
def app(tiny_llama, tmp_path_factory):
    folder = tmp_path_factory.mktemp("toolformer-ui")
    asker = teach_tiny_llama(tiny_llama, folder / "asker", " [Calculator(1 / 0) -> 5] It is 5.",
                             context="Question: what is 1 / 0?\nAnswer:")
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController(["Thought: Do I need to use a tool? No\nAI: hello"]))
    registry = ToolRegistry.from_load("Image2Canny_cpu,Calculator_cpu,Calendar_cpu")
    demo = build_app(registry, pool, review_store=ReviewStore(folder / "r.sqlite"))
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/", asker
    demo.close()


def chat(client: Client, text: str) -> list[dict]:
    client.predict({"text": text, "files": []}, api_name="/add_message")
    return client.predict(api_name="/respond")


def titled(messages: list[dict], title: str) -> list[str]:
    return [block.get("text", "") for m in messages if title in (m.get("metadata") or {}).get("title", "")
            for block in m["content"]]


def test_chat_toolformer_mode_shows_the_call_and_goes_on(app):
    url, asker = app
    client = Client(url, verbose=False)
    client.predict("toolformer", api_name="/set_mode")
    assert "Using" in client.predict("transformers", str(asker), "", api_name="/load_controller")
    messages = chat(client, "what is 1 / 0?")
    assert titled(messages, "Calculator") == ["`Calculator(1 / 0)` → error: division by zero"]
    assert messages[-1]["content"][0]["text"].startswith("[Calculator(1 / 0) -> error: division by zero]")


def test_chat_toolformer_mode_needs_a_local_model(app):
    client = Client(app[0], verbose=False)
    client.predict("toolformer", api_name="/set_mode")
    messages = chat(client, "what is 2 + 2?")
    assert "needs a local transformers controller" in messages[-1]["content"][0]["text"]
    client.predict("agent", api_name="/set_mode")
    assert chat(client, "hi")[-1]["content"][0]["text"] == "hello"  # the agent mode is back


def wait_for(client: Client, run: str, state: str, timeout: float = 300) -> tuple:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.predict(run, api_name="/toolformer_status")
        if f": {state}" in status[0]:
            return status
        assert ": failed" not in status[0], status
        time.sleep(1)
    raise AssertionError(f"run {run} never became {state}: {status}")


def test_train_tab_runs_annotate_finetune_evaluate(app, tiny_llama):
    client = Client(app[0], verbose=False)
    client.predict(SYNTHETIC, ["Calculator", "Calendar"], str(tiny_llama), "tf-1", 4, 1, 2, 1, 2, "0,10",
                   api_name="/toolformer_start")
    status, kept, results, candidates, _ = wait_for(client, "tf-1", "finished")
    assert "| Calculator |" in kept and "| Calendar |" in kept and "4 texts" in kept
    assert "accuracy base" in results and "accuracy tuned" in results and "Perplexity" in results
    assert candidates["headers"] == ["gain (L⁻ − L⁺)", "call", "text", "kept"]
    with pytest.raises(AppError, match="exists already"):
        client.predict(SYNTHETIC, ["Calculator"], str(tiny_llama), "tf-1", 4, 1, 2, 1, 2, "0",
                       api_name="/toolformer_start")
    with pytest.raises(AppError, match="at least one tool"):
        client.predict(SYNTHETIC, [], str(tiny_llama), "tf-2", 4, 1, 2, 1, 2, "0", api_name="/toolformer_start")


def test_a_toolformer_run_can_be_stopped(app, tiny_llama):
    client = Client(app[0], verbose=False)
    client.predict(SYNTHETIC, ["Calculator"], str(tiny_llama), "tf-stop", 200, 5, 5, 1, 2, "0",
                   api_name="/toolformer_start")
    wait_for(client, "tf-stop", "running")
    assert ": stopped" in client.predict("tf-stop", api_name="/toolformer_stop")[0]
    with pytest.raises(AppError, match="no running run"):
        client.predict("tf-stop", api_name="/toolformer_stop")


def test_evaluate_tab_compares_k_values(app, tiny_llama):
    client = Client(app[0], verbose=False)
    table = client.predict(str(tiny_llama), "", str(SVAMP), "0,10", 2, True, api_name="/toolformer_evaluate")
    assert "| k | problems | accuracy | inputs with a call (%) |" in table and "| 10 | 2 |" in table
    assert "Perplexity on `passages.jsonl`" in table
    with pytest.raises(AppError, match="cannot read"):
        client.predict(str(tiny_llama), "", "/no/such.json", "0", 2, False, api_name="/toolformer_evaluate")


def test_tools_tab_runs_a_text_tool_and_refuses_an_injection(app):
    client = Client(app[0], verbose=False)
    image, text, *_ = client.predict("Calculator", None, "18 + 12 * 3", api_name="/run_tool")
    assert image is None and text == "54"
    with pytest.raises(AppError, match="a function call is not allowed"):
        client.predict("Calculator", None, "__import__('os').system('id')", api_name="/run_tool")
    assert client.predict("Calendar", None, "", api_name="/run_tool")[1].startswith("Today is ")
