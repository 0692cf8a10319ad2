"""The canonical record, its JSONL form, rendering through agent/prompts.py, GPT4Tools' JSON."""
import json

import pytest

from agent.parsing import Final, Step, parse_step
from agent.prompts import STOP, ScratchStep, image_turn, render_prompt
from training.data.records import GoldStep, Record, Source, load_jsonl, save_jsonl
from training.data.render import examples, from_gpt4tools, parse_trace, render_trace, sequences, to_gpt4tools
from visual_tools import ToolRegistry

REGISTRY = ToolRegistry.from_load("Image2Canny_cpu,ImageCaptioning_cpu,CannyText2Image_cpu")
EDGE = "image/aaaabbbb_edge_1234abcd_1234abcd.png"


def chain_record(**update) -> Record:
    record = Record(
        id="r1", image_name="image/1234abcd.png", caption="a cat on a sofa", tools=list(REGISTRY.tools),
        instruction="Find the edges, then describe them",
        steps=[GoldStep(tool="Edge Detection On Image", args=["image/1234abcd.png"], observation=EDGE),
               GoldStep(tool="Get Photo Description", args=[EDGE], observation="white lines of a cat")],
        answer=f"The edges are in {EDGE}; they show white lines of a cat.", source=Source(teacher="test"))
    return record.model_copy(update=update)


def test_jsonl_round_trip_and_broken_lines_reported_by_number(tmp_path):
    records = [chain_record(), chain_record(id="r2", history=[("hi", "hello")], answer=None,
                                            original=chain_record().model_dump_json())]
    path = save_jsonl(records, tmp_path / "data.jsonl")
    assert load_jsonl(path).records == records
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{not json", json.dumps({"id": "x"}), lines[1]]) + "\n")
    report = load_jsonl(path)
    assert [r.id for r in report.records] == ["r1", "r2"]
    assert report.errors[0].startswith("line 2: not JSON")
    assert report.errors[1].startswith("line 3: ")
    with pytest.raises(FileNotFoundError):
        load_jsonl(tmp_path / "missing.jsonl")


def test_a_compact_record_is_one_sequence_the_agent_reads_step_by_step():
    record = chain_record()
    [(prompt, pieces)] = sequences(record, REGISTRY.tools, "compact")
    assert [p.trained for p in pieces] == [True, False, True, False, True]
    assert prompt.reply == "" and "Human: Find the edges, then describe them\n" in prompt.head
    # the prompt for step 2 is exactly what the agent loop renders after step 1's observation
    scratch = [ScratchStep(pieces[0].text.removesuffix(STOP[0]), EDGE)]
    offered = [REGISTRY.tools[name] for name in record.tools]
    after_one = render_prompt(offered, [image_turn(record.image_name, record.caption)], record.instruction, scratch,
                              "compact")
    assert after_one.head == prompt.head and after_one.reply == pieces[0].text + pieces[1].text
    # every trained piece parses as the model's own step or final answer
    assert isinstance(parse_step(pieces[0].text), Step) and isinstance(parse_step(pieces[4].text), Final)
    assert pieces[3].text == " white lines of a cat\n" and not pieces[3].trained


def test_gpt4tools_records_train_one_sample_per_step_with_the_scratchpad_in_the_prompt():
    record = chain_record()
    samples = sequences(record, REGISTRY.tools, "gpt4tools")
    assert [[p.trained for p in pieces] for _, pieces in samples] == [[True]] * 3
    second, pieces = samples[1]
    assert second.reply == "" and second.endswith(f"Observation: {EDGE}\n")
    assert (second, pieces[0].text) == examples(record, REGISTRY.tools)[1]


def test_given_steps_are_in_the_prompt_not_trained():
    [(prompt, pieces)] = sequences(chain_record(given_steps=1), REGISTRY.tools, "compact")
    assert [p.trained for p in pieces] == [True, False, True]
    assert "Action: Edge Detection On Image" in prompt.reply and "Observation: " + EDGE in prompt.reply
    first, _ = sequences(chain_record(given_steps=1), REGISTRY.tools, "gpt4tools")[0]
    assert "Observation: " + EDGE in first and first.reply == ""


def test_trace_round_trip_and_errors():
    record = chain_record()
    assert parse_trace(render_trace(record)) == (record.steps, record.answer)
    with pytest.raises(ValueError, match="no 'Observation:'"):
        parse_trace("Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\nAction Input: x.png")
    with pytest.raises(ValueError, match="Could not parse"):
        parse_trace("I will just do it")


def test_gpt4tools_export_then_import_gives_the_record_back():
    record = chain_record()
    samples = to_gpt4tools(record, REGISTRY.tools)
    assert len(samples) == 3 and all(s["input"] == "" for s in samples)
    assert samples[0]["output"].endswith("Observation:") and samples[2]["output"].startswith("Thought: Do I need")
    first, second, last = (from_gpt4tools(s) for s in samples)
    assert (first.kind, first.given_steps, first.answer) == ("positive", 0, None)
    assert (second.kind, second.given_steps) == ("context", 1)
    assert last.steps == record.steps and last.answer == record.answer
    assert (last.image_name, last.caption, last.instruction, last.tools) == \
        (record.image_name, record.caption, record.instruction, record.tools)
    assert [s["output"] for s in to_gpt4tools(last, REGISTRY.tools)] == [samples[2]["output"]]
    assert examples(last, REGISTRY.tools)[0][0] == samples[2]["instruction"]


def test_gpt4tools_own_wording_imports():
    sample = {"instruction": (
        "GPT4Tools can handle various text and visual tasks...\n\nTOOLS:\n------\n\nGPT4Tools has access to the "
        "following tools:\n\n> Edge Detection On Image: useful when...\n> Get Photo Description: useful...\n\n"
        "To use a tool, please use the following format:\n\nPrevious conversation:\n\nHuman: Provide an image "
        "named image/abcd1234.png. Description: a dog on grass Understand the image using tools.\nAI: Received."
        "\n\nNew input: Describe the dog\nGPT4Tools needs to use tools to observe images, not directly imagine "
        "them. Thoughts and observations in the conversation are only visible to GPT4Tools. When answering human "
        "questions, repeat important information. Let's think step by step.\n"),
        "input": "", "output": "Thought: Do I need to use a tool? Yes\nAction: Get Photo Description\n"
                               "Action Input: image/abcd1234.png\nObservation:\n"}
    record = from_gpt4tools(sample)
    assert record.image_name == "image/abcd1234.png" and record.caption == "a dog on grass"
    assert record.tools == ["Edge Detection On Image", "Get Photo Description"]
    assert record.instruction == "Describe the dog"
    assert record.steps == [GoldStep(tool="Get Photo Description", args=["image/abcd1234.png"])]
    with pytest.raises(ValueError, match="not a GPT4Tools prompt"):
        from_gpt4tools({"instruction": "hello", "output": "x"})


def test_trace_arguments_split_by_the_tools_inputs():
    crop = ToolRegistry.from_load("CropImage_cpu").tools
    text = ("Thought: Do I need to use a tool? Yes\nAction: Crop Image\nAction Input: image/1234abcd.png, "
            "[1, 2, 30, 40]\nObservation: image/x.png\nThought: Do I need to use a tool? No\nAI: cropped")
    steps, answer = parse_trace(text, crop)
    assert steps[0].args == ["image/1234abcd.png", "[1, 2, 30, 40]"] and answer == "cropped"
    assert len(parse_trace(text)[0][0].args) == 5  # without the schema every comma splits
