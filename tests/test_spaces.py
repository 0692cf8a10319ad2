"""Hugging Face Spaces readiness: the README's front matter, requirements.txt, `@spaces.GPU` where the package is,
the `--demo` mode of a shared Space, and the data folder moved by TOOLSMITH_HOME."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gradio as gr
import pytest
import yaml
from conftest import launched, python_output
from gradio_client import Client, handle_file
from packaging.requirements import Requirement
from PIL import Image
from scripted import ScriptedController

from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from app import DEMO_NOTICE, build_app, parse_args
from training.data.review_store import ReviewStore
from training.ui.data_tab import DEMO_MAX_RECORDS
from visual_tools import ToolRegistry
from visual_tools.zerogpu import on_gpu

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"


def test_readme_front_matter_is_a_complete_space_card():
    _, header, _ = (ROOT / "README.md").read_text().split("---\n", 2)
    card = yaml.safe_load(header)
    assert {"title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "app_file", "python_version", "license",
            "short_description", "suggested_hardware", "pinned"} <= set(card)
    assert card["sdk"] == "gradio" and card["sdk_version"] == gr.__version__  # the version the tests ran on
    assert (ROOT / card["app_file"]).is_file() and len(card["short_description"]) <= 60  # the Hub's limit
    assert card["python_version"] == f"{sys.version_info.major}.{sys.version_info.minor}"


def test_requirements_are_plain_pins_a_space_can_install():
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    requirements = [Requirement(line) for line in lines if line]  # a flag or a local path would not parse
    names = {r.name for r in requirements}
    assert str(next(r for r in requirements if r.name == "torch").specifier) == "==2.13.0"
    assert {"gradio", "transformers", "peft", "diffusers"} <= names and not any(r.url for r in requirements)


def test_on_gpu_is_a_no_op_off_zerogpu_and_wraps_with_spaces_gpu(monkeypatch, tmp_path):
    def work(x: int) -> int:
        return x + 1

    import spaces
    assert on_gpu(work) is work  # the real `spaces` package, on a machine without ZeroGPU
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "spaces", None)  # not installed
        assert on_gpu(work) is work
    wrapped: list[tuple[str, int]] = []

    def gpu(duration: int = 60):  # what ZeroGPU's decorator receives from the app
        return lambda fn: wrapped.append((fn.__name__, duration)) or fn

    monkeypatch.setattr(spaces, "GPU", gpu)
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController(["Thought: Do I need to use a tool? No\nAI: hi"]))
    build_app(ToolRegistry.from_load("Image2Canny_cpu"), pool, review_store=ReviewStore(tmp_path / "r.sqlite"))
    assert ("respond", 120) in wrapped and ("run_tool", 120) in wrapped  # a chat turn, a tool run
    assert sum(name == "on_run" and seconds == 600 for name, seconds in wrapped) == 4  # the four evaluations


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory):
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController(["Thought: Do I need to use a tool? No\nAI: hello from the demo"]))
    store = ReviewStore(tmp_path_factory.mktemp("demo") / "review.sqlite")
    app = build_app(ToolRegistry.from_load("Image2Canny_cpu"), pool, review_store=store, demo=True)
    with launched(app, max_file_size="1mb") as url:  # as app.main() launches with --demo --max-upload-mb 1
        yield url


def test_demo_mode_has_no_training_nor_evaluation_and_small_generation(demo_url, tmp_path):
    client = Client(demo_url, verbose=False)
    endpoints = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
    assert "/respond" in endpoints and "/generate" in endpoints
    assert not {"/train_start", "/toolace_start", "/toolformer_start", "/load_in_chat", "/evaluate",
                "/bfcl_evaluate", "/toolformer_evaluate"} & endpoints
    assert "own controller only" in client.predict("transformers", "gpt2", "", api_name="/load_controller")
    with pytest.raises(Exception, match=f"greater than maximum value {DEMO_MAX_RECORDS}"):  # Gradio checks it
        client.predict(str(ASSETS), None, "template", DEMO_MAX_RECORDS + 1, 10, 0, "big", True, api_name="/generate")
    with pytest.raises(Exception, match="shared demo"):
        client.predict("/etc", None, "template", 4, 4, 0, "elsewhere", True, api_name="/generate")
    with pytest.raises(Exception, match=r"not in the list of choices: \['template'\]"):
        client.predict(str(ASSETS), None, "http://127.0.0.1:9/v1", 4, 4, 0, "teacher", True, api_name="/generate")
    report, _, _ = client.predict(str(ASSETS), None, "template", 4, 4, 0, "small", True, api_name="/generate")
    assert "new records queued for review" in report


def test_demo_mode_limits_uploads_and_still_chats(demo_url, tmp_path):
    client = Client(demo_url, verbose=False)
    big = tmp_path / "big.png"
    Image.frombytes("RGB", (1024, 1024), os.urandom(1024 * 1024 * 3)).save(big)  # ~3 MB of noise
    with pytest.raises(Exception, match="(?i)file size|too large|exceeds"):
        client.predict({"text": "edges", "files": [handle_file(str(big))]}, api_name="/add_message")
    client.predict({"text": "hello", "files": [handle_file(str(ASSETS / "chelsea.png"))]}, api_name="/add_message")
    assert "hello from the demo" in str(client.predict(api_name="/respond"))


def test_demo_is_on_in_a_space_unless_switched_off(monkeypatch):
    monkeypatch.delenv("TOOLSMITH_DEMO", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert not parse_args([]).demo and parse_args(["--demo"]).demo
    monkeypatch.setenv("SPACE_ID", "someone/toolsmith")
    assert parse_args([]).demo and not parse_args(["--no-demo"]).demo
    monkeypatch.setenv("TOOLSMITH_DEMO", "0")  # a duplicated, private Space
    assert not parse_args([]).demo
    assert "switched off in this shared demo" in DEMO_NOTICE.format(what="Training")


def test_toolsmith_home_moves_every_file_the_app_writes(tmp_path):
    code = ("from visual_tools import data_home, ImageStore; from training.data.review_store import ReviewStore; "
            "from training.ui.train_tab import RUNS; s = ImageStore.new_session(); "
            "print(data_home(), ReviewStore.default().path, s.root, RUNS.home(), sep='\\n')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TOOLSMITH_HOME": str(tmp_path / "mounted")})
    assert done.returncode == 0, done.stderr[-2000:]
    paths = done.stdout.split()
    assert len(paths) == 4 and all(Path(p).is_relative_to(tmp_path / "mounted") for p in paths)


def test_building_the_app_imports_no_model_library():
    """A Space starts faster when the app imports only what its first page needs: torch and the training code load
    when a tool, a training run or an evaluation first needs them (the embedded controller on llama.cpp uses
    transformers' tokenizer only)."""
    pytest.importorskip("llama_cpp")
    from agent.factory import ControllerSpec, load_controller
    load_controller(ControllerSpec())  # the first start's conversion, once, in this test data folder
    code = ("import sys; from app import build_app; from agent.pool import ControllerPool; "
            "from agent.factory import ControllerSpec; from visual_tools import ToolRegistry; "
            "build_app(ToolRegistry.from_load('Image2Canny_cpu'), ControllerPool(ControllerSpec.parse('embedded'))); "
            "print(sorted(m for m in ('torch', 'peft', 'sentence_transformers', 'nltk', 'training.tuning.sft') "
            "if m in sys.modules))")
    assert python_output(code) == "[]"
