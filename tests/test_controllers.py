import threading
import time

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from agent.controller import ControllerError
from agent.factory import ControllerSpec, load_controller
from agent.events import ErrorEvent
from agent.hf_controller import TransformersController
from agent.loop import Agent
from agent.openai_controller import OpenAIController
from agent.prompts import STOP, ScratchStep, image_turn, render_prompt, render_step
from agent.server import create_app
from agent.session import ChatSession
from conftest import free_port
from visual_tools import ToolRegistry

PROMPT = render_prompt(ToolRegistry.from_load("Image2Canny_cpu").all(), [image_turn("image/1a2b3c4d.png", None)],
                       "detect the edges")


@pytest.fixture(scope="module")
def controller(tiny_llama):
    return load_controller(ControllerSpec.parse(str(tiny_llama)))


def test_loads_a_saved_checkpoint_by_path(controller, tiny_llama):
    assert isinstance(controller, TransformersController)
    assert controller.chat_format == "chat" and controller.name == str(tiny_llama)
    assert "<|im_start|>user\n" + PROMPT in controller.format_prompt(PROMPT)


def test_prefix_cache_gives_the_same_text_and_reuses_the_prompt(tiny_llama):
    cached = TransformersController.from_pretrained(str(tiny_llama))
    plain = TransformersController.from_pretrained(str(tiny_llama), prefix_cache=False)
    second = PROMPT + "Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\n"
    for prompt in (PROMPT, second, PROMPT):
        assert cached.generate(prompt, max_new_tokens=12) == plain.generate(prompt, max_new_tokens=12)
    prompt_tokens = len(cached._encode(cached.format_prompt(PROMPT), special=False))
    assert cached.reused_tokens > 2 * (prompt_tokens - 40)  # calls 2 and 3 re-encoded only their tail
    assert plain.reused_tokens == 0


def test_stream_equals_generate_and_stops(controller):
    whole = controller.generate(PROMPT, max_new_tokens=20)[0]
    assert "".join(controller.stream(PROMPT, max_new_tokens=20)) == whole
    stop = whole[5:9]
    if stop.strip():
        assert controller.generate(PROMPT, stop=[stop], max_new_tokens=20)[0] == whole[: whole.index(stop)]
        assert "".join(controller.stream(PROMPT, stop=[stop], max_new_tokens=20)) == whole[: whole.index(stop)]


def test_sampling_returns_n_texts(controller):
    texts = controller.generate(PROMPT, max_new_tokens=8, temperature=1.0, n=3)
    assert len(texts) == 3 and all(isinstance(t, str) for t in texts)


def test_logprobs_match_a_manual_forward(controller):
    tok, model = controller.tokenizer, controller.model
    head, tail = tok("Thought: Do I")["input_ids"], tok(" need to use a tool?", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([head + tail])).logits[0].log_softmax(-1)
    manual = [logits[len(head) - 1 + i, t].item() for i, t in enumerate(tail)]
    assert controller.logprobs("Thought: Do I", " need to use a tool?") == pytest.approx(manual, abs=1e-5)


def test_vicuna_format_is_gpt4tools(tiny_llama):
    vicuna = TransformersController.from_pretrained(str(tiny_llama), chat_format="vicuna")
    assert vicuna.format_prompt("P") == "USER: \nPASSISTANT:"


def test_lora_adapter_is_applied(tiny_llama, tmp_path):
    base = AutoModelForCausalLM.from_pretrained(tiny_llama)
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                                           init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")
    plain = load_controller(ControllerSpec.parse(str(tiny_llama)))
    tuned = load_controller(ControllerSpec.parse(str(tiny_llama), str(tmp_path / "adapter")))
    assert "adapter" in tuned.name
    assert tuned.logprobs("Thought:", " Do I need") != pytest.approx(plain.logprobs("Thought:", " Do I need"))


def test_bad_checkpoints_are_controller_errors(tmp_path, tiny_llama):
    with pytest.raises(ControllerError, match="cannot load controller"):
        load_controller(ControllerSpec.parse(str(tmp_path / "missing")))
    with pytest.raises(ControllerError, match="cannot load adapter"):
        load_controller(ControllerSpec.parse(str(tiny_llama), str(tmp_path / "missing-adapter")))
    with pytest.raises(ControllerError, match="CUDA"):
        TransformersController.from_pretrained(str(tiny_llama), load_in_4bit=True)


@pytest.fixture(scope="module")
def server(controller):
    import uvicorn
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(controller, "tiny"), host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/v1"
    srv.should_exit = True
    thread.join(10)


def test_openai_backend_against_a_real_server(server, controller):
    remote = load_controller(ControllerSpec.parse(server))
    assert isinstance(remote, OpenAIController) and remote.model == "tiny"
    local = controller.generate(PROMPT, stop=STOP, max_new_tokens=16)
    assert remote.generate(PROMPT, stop=STOP, max_new_tokens=16) == local
    assert "".join(remote.stream(PROMPT, stop=STOP, max_new_tokens=16)) == local[0]
    assert len(remote.generate(PROMPT, max_new_tokens=4, temperature=1.0, n=2)) == 2


def test_a_compact_reply_so_far_is_continued_over_http(server, controller):
    """The compact template's scratchpad travels as an assistant message to continue, not inside the user's."""
    tools = ToolRegistry.from_load("Image2Canny_cpu").all()
    step = ScratchStep(render_step("Do I need to use a tool? Yes", tools[0].name, "image/1a2b3c4d.png"),
                       "image/0f0f0f0f_edge_1a2b3c4d_1a2b3c4d.png")
    prompt = render_prompt(tools, [image_turn("image/1a2b3c4d.png", None)], "edges", [step], "compact")
    remote = OpenAIController(server, model="tiny")
    assert remote.generate(prompt, stop=STOP, max_new_tokens=12) == controller.generate(prompt, stop=STOP,
                                                                                          max_new_tokens=12)
    assert controller.format_prompt(prompt).endswith("<|im_start|>assistant\n" + prompt.reply)


def test_openai_backend_logprobs(server, controller):
    remote = OpenAIController(server, model="tiny")
    text = "Thought: Do I need to use a tool?"
    tokens, offsets, scores = controller.token_logprobs(text)
    cut = offsets.index(next(o for o in offsets if o >= len("Thought:")))
    assert remote.logprobs(text[: offsets[cut]], text[offsets[cut]:]) == pytest.approx(scores[cut:], abs=1e-5)


def test_refused_connection_is_a_clear_error():
    remote = OpenAIController(f"http://127.0.0.1:{free_port()}/v1", model="m", timeout=5)
    with pytest.raises(ControllerError, match="cannot reach the controller"):
        remote.generate("hi")
    events = list(ChatSession().send(Agent(remote, ToolRegistry.from_load("Image2Canny_cpu")), "hi"))
    assert isinstance(events[-1], ErrorEvent) and "cannot reach the controller" in events[-1].message
