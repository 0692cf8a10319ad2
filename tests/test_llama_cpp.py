"""The embedded controller on llama.cpp: the merged GGUF against the transformers path, conversion caching and
its failures, the fallback, context windowing, and concurrent chats on one engine."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from chat_client import chat, files, texts
from conftest import launched, python_output
from gradio_client import Client

from agent import Agent
from agent.controller import PromptTooLong
from agent.embedded import ADAPTER_DIR, embedded_checkpoint, embedded_tokenizer, gguf_path, load_embedded
from agent.events import AnswerEvent, ErrorEvent, ToolCallEvent
from agent.factory import ControllerSpec, load_controller
from agent.gguf_merge import merged_gguf
from agent.hf_controller import TransformersController
from agent.llama_cpp_controller import LlamaCppController
from agent.pool import ControllerPool
from agent.prompts import STOP, Turn, image_turn, render_prompt
from visual_tools import ToolRegistry, data_home

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
PROMPT = render_prompt(ToolRegistry.from_load(None).available(), [image_turn("image/3f9a1c2e.png", None)],
                       "Detect the edges of this image.")


def random_lora(folder: Path, targets=("q_proj", "k_proj", "v_proj", "o_proj"), **extra) -> Path:
    """A LoRA whose B is not zero (a fresh one changes nothing), small enough to keep the model coherent."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(embedded_checkpoint())
    torch.manual_seed(0)
    peft = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=list(targets), task_type="CAUSAL_LM",
                                            init_lora_weights=False, **extra))
    with torch.no_grad():
        for name, param in peft.named_parameters():
            if "lora_B" in name:
                param.mul_(0.05)
    peft.save_pretrained(folder)
    return folder


def last_logits(controller, ids: list[int]) -> np.ndarray:
    if isinstance(controller, LlamaCppController):  # llama.cpp keeps the last row of logits only: read it
        import llama_cpp
        llm = controller.llm
        llm.reset()
        llm.eval(ids)
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()
    with torch.inference_mode():
        return controller.model(torch.tensor([ids])).logits[0, -1].float().numpy()


def test_the_merged_gguf_computes_what_the_transformers_path_computes(tmp_path):
    """q/k rows permuted, alpha/r scaling, float16: llama.cpp's logits with a LoRA merged follow the
    transformers path's with the same LoRA, and move away from the base's as the LoRA does."""
    adapter = random_lora(tmp_path / "lora")
    engine = load_embedded(adapter=str(adapter), engine="llama.cpp")
    reference = load_embedded(adapter=str(adapter), engine="transformers")
    base = load_embedded(adapter="none", engine="transformers")
    ids = reference.encode_prompt(PROMPT)
    assert engine.encode_prompt(PROMPT) == ids  # one tokenizer, one chat template
    ours, theirs, untuned = (last_logits(c, ids) for c in (engine, reference, base))
    assert np.corrcoef(ours, theirs)[0, 1] > 0.999 and ours.argmax() == theirs.argmax()
    assert np.abs(ours - theirs).max() < 0.25 * np.abs(theirs - untuned).max()  # far closer than the LoRA's effect
    greedy = [c.generate(PROMPT, stop=STOP, max_new_tokens=24)[0] for c in (engine, reference)]
    assert greedy[0] == greedy[1]


def test_the_default_embedded_controller_is_llama_cpp_with_the_shipped_adapter(capfd):
    controller = load_controller(ControllerSpec())
    assert isinstance(controller, LlamaCppController)
    assert controller.name == "embedded: SmolLM2-135M-Instruct + controller-lora · llama.cpp"
    assert "embedded controller: llama.cpp" in capfd.readouterr().err  # the one line that says which path runs
    text = controller.generate(PROMPT, stop=STOP, max_new_tokens=40)[0]
    assert "Action: Edge Detection On Image" in text and "image/3f9a1c2e.png" in text
    streamed = "".join(controller.stream(PROMPT, stop=STOP, max_new_tokens=40))
    assert streamed == text



def test_a_later_start_on_llama_cpp_imports_only_what_it_uses():
    """After the first conversion, starting the embedded controller on llama.cpp and listing the tools import neither
    torch nor any tool's model library (the shortlist's encoder loads at the first message that needs it)."""
    load_controller(ControllerSpec(engine="llama.cpp"))  # converts once, in this test data folder
    code = ("import sys; from agent.factory import ControllerSpec, load_controller; from visual_tools import "
            "ToolRegistry; load_controller(ControllerSpec(engine='llama.cpp')).generate('Hi', max_new_tokens=1); "
            "ToolRegistry.from_load('Image2Canny_cpu,Calculator_cpu').available(); "
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'diffusers', 'gradio') if m in sys.modules))")
    assert python_output(code) == "[]"


def _convert_in_child(adapter: Path, home: Path) -> subprocess.Popen:
    code = ("from pathlib import Path; from agent.embedded import gguf_path; from agent.gguf_merge import merged_gguf;"
            f"merged_gguf(gguf_path(), Path({str(adapter)!r}), Path({str(home / 'engine')!r}))")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def test_an_interrupted_conversion_leaves_nothing_a_later_start_would_use(tmp_path, monkeypatch):
    """Killed at any moment, the conversion leaves either no file under the final name or a whole one; the
    next start converts (or loads) and cleans what the killed one left."""
    monkeypatch.setenv("TOOLSMITH_HOME", str(tmp_path))
    engine_dir = tmp_path / "engine"
    for delay in (0.5, 2.0, 4.0, 6.0):
        child = _convert_in_child(ADAPTER_DIR, tmp_path)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        finals = list(engine_dir.glob("*.f16.gguf"))
        for final in finals:  # finished before the kill: whole
            assert LlamaCppController(final, embedded_tokenizer(gguf_path())).generate("Hi", max_new_tokens=2)
            final.unlink()
    controller = load_embedded(engine="llama.cpp")
    assert controller.generate(PROMPT, stop=STOP, max_new_tokens=40)[0].count("Edge Detection On Image") == 1
    assert not list(engine_dir.glob("*.partial-*"))  # the killed runs' leftovers are gone


def test_the_cache_is_keyed_by_the_adapters_content(tmp_path):
    cache = tmp_path / "engine"
    first = random_lora(tmp_path / "a")
    path = merged_gguf(gguf_path(), first, cache)
    assert merged_gguf(gguf_path(), first, cache) == path  # the same adapter: converted once
    stamp = path.stat().st_mtime_ns
    (tmp_path / "a" / "adapter_config.json").write_text(
        json.dumps({**json.loads((first / "adapter_config.json").read_text()), "lora_alpha": 8}))
    changed = merged_gguf(gguf_path(), first, cache)
    assert changed != path and path.stat().st_mtime_ns == stamp


def test_a_truncated_cached_gguf_is_refused_with_its_path_and_converted_again(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("TOOLSMITH_HOME", str(tmp_path))
    adapter = random_lora(tmp_path / "lora")
    path = merged_gguf(gguf_path(), adapter, tmp_path / "engine")
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)
    controller = load_embedded(adapter=str(adapter), engine="llama.cpp")
    assert f"Refusing {path}" in capfd.readouterr().err
    assert controller.generate("Hello", max_new_tokens=3)[0]
    assert path.stat().st_size > 200e6  # whole again


def test_an_adapter_llama_cpp_cannot_take_runs_on_transformers_saying_so(tmp_path, capfd):
    adapter = random_lora(tmp_path / "lora", targets=("q_proj", "lm_head"))
    controller = load_controller(ControllerSpec(adapter=str(adapter)))
    assert isinstance(controller, TransformersController)
    assert "transformers (not on llama.cpp:" in controller.name and "lm_head" in controller.name
    assert "lm_head" in capfd.readouterr().err
    with pytest.raises(Exception, match="llama.cpp engine cannot run here"):
        load_embedded(adapter=str(adapter), engine="llama.cpp")


def test_without_llama_cpp_python_the_embedded_controller_runs_on_transformers():
    code = ("import sys; sys.modules['llama_cpp'] = None\n"  # what a failed build leaves: no module
            "from agent.factory import ControllerSpec, load_controller\nprint(load_controller(ControllerSpec()).name)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "transformers (llama-cpp-python is not installed" in done.stdout
    assert "embedded controller: transformers fp32" in done.stderr


def test_a_prompt_longer_than_the_context_loses_its_oldest_turns(store):
    gguf = merged_gguf(gguf_path(), ADAPTER_DIR, data_home() / "engine")
    small = LlamaCppController(gguf, embedded_tokenizer(gguf_path()), n_ctx=2048)
    registry = ToolRegistry.from_load(None)
    name = store.save_upload(ASSETS / "chelsea.png")
    chatter = [Turn("Tell me something about cats. " * 40, "Cats sleep a lot. " * 40) for _ in range(5)]
    history = [*chatter, image_turn(name, None)]
    with pytest.raises(PromptTooLong):
        small.generate(render_prompt(registry.available(), history, "Detect the edges of this image."))
    events = list(Agent(small, registry, max_steps=2, history_turns=10).run("Detect the edges of this image.",
                                                                          history, store))
    assert not [e for e in events if isinstance(e, ErrorEvent)]  # the oldest turns gave way: the turn ran
    # whether the model then calls Edge Detection is its judgement (the shipped round-1 adapter answers instead
    # after this long chat; docs/adapter.md); the grammar keeps any call to this chat's image
    assert isinstance(events[-1], AnswerEvent)
    assert all(name in e.tool_input for e in events if isinstance(e, ToolCallEvent))


@pytest.fixture(scope="module")
def engine_app():
    from app import build_app
    pool = ControllerPool()
    assert isinstance(pool.get(), LlamaCppController)
    with launched(build_app(ToolRegistry.from_load(None), pool)) as url:
        yield url


def test_four_chats_at_once_on_one_engine_each_get_their_own_answer(engine_app):
    photos = ["chelsea.png", "coffee.png", "rocket.jpg", "astronaut.png"]

    def user(photo: str) -> list[dict]:
        return chat(Client(engine_app, verbose=False), "Detect the edges of this image.", ASSETS / photo)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(user, photos, timeout=600))
    uploads = [files(m)[0]["alt_text"] for m in results]
    assert len(set(uploads)) == 4
    for upload, messages in zip(uploads, results):
        root = re.search(r"image/([0-9a-f]{8})\.png", upload).group(1)
        made = [f["alt_text"] for f in files(messages)][1:]
        assert made and all(name.endswith(f"_{root}.png") and "_edge_" in name for name in made)  # its own edges
        assert not any(other in texts(messages) for other in uploads if other != upload)


def test_chat_cli_keeps_stdout_for_json_events(tmp_path):
    """A first run converts (its progress goes to stderr): `python -m agent chat … | jq` reads JSON only."""
    env = {**os.environ, "TOOLSMITH_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "agent", "chat", "--image", str(ASSETS / "chelsea.png"),
                           "--max-steps", "2", "Detect the edges of this image."], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON
    assert events[0]["type"] == "SessionEvent" and "llama.cpp" in events[0]["controller"]
    assert any(e["type"] == "ToolCallEvent" and e["tool"] == "Edge Detection On Image" for e in events)
    assert "Converting" in done.stderr and "Reading the embedded controller's tokenizer" in done.stderr
    assert next(e for e in events if e["type"] == "AnswerEvent")["images"]


def test_evaluate_runs_the_untuned_base_with_adapter_none():
    done = subprocess.run([sys.executable, "-m", "training", "evaluate", "--data",
                           str(ASSETS / "eval" / "handwritten.jsonl"), "--adapter", "none", "--limit", "3",
                           "--offer", "available", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout[done.stdout.index("{"):])
    assert result["controller"] == "embedded: SmolLM2-135M-Instruct (untuned) · llama.cpp"
    assert result["rows"][0]["cases"] == 3


def test_the_server_serves_the_engine_and_says_it_does_not_score():
    from fastapi.testclient import TestClient

    from agent.server import create_app
    client = TestClient(create_app(load_embedded(), "toolsmith"))
    reply = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": PROMPT}],
                                                      "stop": list(STOP), "max_tokens": 40})
    assert "Action: Edge Detection On Image" in reply.json()["choices"][0]["message"]["content"]
    scored = client.post("/v1/completions", json={"prompt": "hi", "echo": True, "logprobs": 0})
    assert scored.status_code == 400 and "does not score tokens" in scored.text
