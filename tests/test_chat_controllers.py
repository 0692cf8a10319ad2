"""The Chat tab's controller picker: each backend makes its own kind of controller (the radio is the spec's kind),
and Toolformer mode on the default embedded controller runs on the transformers path of the same model."""
from __future__ import annotations

import gradio as gr
import pytest
from gradio_client import Client

from agent.chat_ui import ChatServices, build_chat_tab
from agent.factory import ControllerSpec
from agent.hf_controller import TransformersController
from agent.openai_controller import OpenAIController
from agent.pool import ControllerPool
from conftest import launched
from scripted import ScriptedController
from training.toolformer.decode import answer
from visual_tools import ToolRegistry

SCRIPTED = ControllerSpec.parse("scripted")


@pytest.fixture(scope="module")
def picker():
    """The function the Chat's "Load controller" button calls, and the pool it loads into."""
    pool = ControllerPool(default=SCRIPTED)
    pool.add(SCRIPTED, ScriptedController(["Thought: Do I need to use a tool? No\nAI: hi"]))
    with gr.Blocks():
        tab = build_chat_tab(ChatServices(ToolRegistry.from_load("Image2Canny_cpu"), pool))
    return tab.load[0], pool


def test_each_backend_loads_its_own_kind_of_controller(picker, tiny_llama):
    load, pool = picker
    status, state = load("transformers", f" {tiny_llama} ", "", "auto", None)
    assert "Using" in status and state.controller == ControllerSpec("transformers", str(tiny_llama))
    assert isinstance(pool.get(state.controller), TransformersController)
    status, state = load("openai", "http://127.0.0.1:9/v1#m", "", "auto", state)
    assert "Using **m @ http://127.0.0.1:9/v1**" in status
    assert isinstance(pool.get(state.controller), OpenAIController)



@pytest.mark.parametrize("engine", ["transformers", "llama.cpp"])
def test_the_embedded_backend_runs_on_the_engine_chosen(picker, engine):
    if engine == "llama.cpp":
        pytest.importorskip("llama_cpp")
    load, pool = picker
    status, state = load("embedded", "", "", engine, None)
    assert state.controller == ControllerSpec(engine=engine)
    assert status.startswith("✅ Using") and f"· {engine}**" in status
    assert pool.get(state.controller).name.endswith(f"· {engine}")


def test_the_default_and_its_engine_named_are_one_controller():
    pytest.importorskip("llama_cpp")
    pool = ControllerPool()  # the app's default: engine "auto"
    default = pool.get(ControllerSpec(engine="auto"))
    assert pool.get(ControllerSpec(engine="llama.cpp")) is default  # not a second copy of the model

@pytest.mark.parametrize(("kind", "where", "message"), [
    ("openai", "TINY", "is not an OpenAI-compatible URL"),  # before: loaded as a transformers model
    ("transformers", "http://127.0.0.1:9/v1", "is a URL: choose the OpenAI-compatible backend"),
    ("transformers", "", "Enter a model id, folder or URL."),
])
def test_a_text_that_does_not_fit_the_chosen_backend_is_refused_and_nothing_loads(picker, tiny_llama, kind, where,
                                                                                  message):
    load, pool = picker
    status, state = load(kind, where.replace("TINY", str(tiny_llama)), "", "auto", None)
    assert status.startswith("⚠️") and message in status
    assert state.controller is None  # the chat keeps the controller it had


def test_the_engine_counts_for_the_embedded_backend_only(picker):
    load, _ = picker
    status, state = load("transformers", "http://x/v1", "", "llama.cpp", None)
    assert "is a URL" in status  # the engine radio (hidden for this backend) is not what is refused


@pytest.fixture(scope="module")
def embedded_chat():
    pytest.importorskip("llama_cpp")
    pool = ControllerPool()  # the app's default: embedded, on llama.cpp here
    with gr.Blocks() as demo:
        build_chat_tab(ChatServices(ToolRegistry.from_load("Calculator_cpu,Calendar_cpu"), pool, toolformer=answer))
    with launched(demo) as url:
        yield url, pool


def test_toolformer_mode_on_the_default_embedded_controller_runs_on_its_transformers_path(embedded_chat):
    url, pool = embedded_chat
    default = pool.get()
    assert default.name.endswith("· llama.cpp")
    client = Client(url, verbose=False)
    client.predict("toolformer", api_name="/set_mode")
    client.predict({"text": "what is 12 * 7?", "files": []}, api_name="/add_message")
    messages = client.predict(api_name="/respond")
    notes = [m["content"][0]["text"] for m in messages if "engine" in (m.get("metadata") or {}).get("title", "")]
    able = "embedded: SmolLM2-135M-Instruct + controller-lora · transformers"
    assert notes == [f"{default.name} keeps no transformers model to decode with calls: {able} answers"]
    reply = messages[-1]["content"][0]["text"]
    assert reply and "⚠️" not in reply  # answered, not refused as "served over HTTP"
    assert isinstance(pool.get(ControllerSpec(engine="transformers")), TransformersController)
