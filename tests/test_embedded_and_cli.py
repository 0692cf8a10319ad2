import json
import subprocess
import sys

from agent.controller import load_controller
from agent.embedded import MODEL_NAME, embedded_checkpoint
from agent.prompts import STOP, image_turn
from visual_tools import data_home


def test_embedded_default_converts_once_and_generates():
    controller = load_controller("embedded")
    folder = data_home() / "models" / MODEL_NAME
    assert (folder / "model.safetensors").is_file() and embedded_checkpoint() == str(folder)
    assert controller.name.startswith("embedded: SmolLM2-135M-Instruct") and controller.chat_format == "chat"
    assert sum(p.numel() for p in controller.model.parameters()) > 130e6
    answer = controller.generate("What is the capital of France? Answer in one word.", stop=STOP,
                                 max_new_tokens=8)[0]
    assert "paris" in answer.lower()


def test_the_shipped_adapter_makes_the_embedded_controller_call_tools(store, monkeypatch):
    """The default chat, as a new user meets it: the tuned SmolLM2 calls an offline tool on a real photo. The
    file names are fixed: the 135M model sometimes miscopies repetitive random ones (14d0d0c8 -> 14d0d0d0c8)."""
    from pathlib import Path

    import visual_tools.image_store as image_store
    names = iter(["3f9a1c2e", "b7e41d05", "5c2a9e71", "e08d3b4f"])
    monkeypatch.setattr(image_store, "_new_id", lambda: next(names))

    from agent import Agent
    from agent.events import AnswerEvent, ToolCallEvent
    from visual_tools import ToolRegistry
    controller = load_controller("embedded")
    assert controller.name.endswith("+ controller-lora")  # assets/controller-lora is applied by default
    registry = ToolRegistry.from_load("Image2Canny_cpu,Image2Line_cpu,CropImage_cpu,TextDetection_cpu")
    name = store.save_upload(Path(__file__).resolve().parent.parent / "assets" / "chelsea.png")
    events = list(Agent(controller, registry).run("Detect the edges of this image.",
                                                  [image_turn(name, None)], store))
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert calls and calls[0].tool == "Edge Detection On Image" and name in calls[0].tool_input
    answer = next(e for e in events if isinstance(e, AnswerEvent))
    assert answer.images and "_edge_" in answer.images[0]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "agent", "chat", *args], capture_output=True, text=True,
                          timeout=300)


def test_chat_cli_prints_json_events(tiny_llama, box_image):
    done = cli("--controller", str(tiny_llama), "--image", str(box_image), "--max-steps", "2", "detect the edges")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events[:2]] == ["SessionEvent", "ImageEvent"]
    assert events[-1]["type"] in ("AnswerEvent", "ErrorEvent")
    assert all("type" in e for e in events) and len(events) >= 3


def test_chat_cli_reports_bad_input(tiny_llama, tmp_path):
    done = cli("--controller", str(tmp_path / "none"), "hi")
    assert done.returncode == 1 and "cannot load controller" in json.loads(done.stdout)["message"]
    bad = tmp_path / "x.png"
    bad.write_text("no image")
    done = cli("--controller", str(tiny_llama), "--image", str(bad), "hi")
    assert done.returncode == 1 and "not a readable image" in done.stdout.splitlines()[-1]
