import pytest

from agent.parsing import Final, ParseError, Step, parse_step, trim_repetition
from agent.prompts import (STOP, ScratchStep, Turn, image_turn, render_prompt, render_step)
from visual_tools import ToolRegistry


def test_prompt_has_gpt4tools_parts_in_order():
    tools = ToolRegistry.from_load("Image2Canny_cpu,ImageCaptioning_cpu").all()
    history = [image_turn("image/1a2b3c4d.png", "a cat"), Turn("hi", "hello")]
    steps = [ScratchStep(render_step("Do I need to use a tool? Yes", "Edge Detection On Image",
                                     "image/1a2b3c4d.png"), "image/0f0f0f0f_edge_1a2b3c4d_1a2b3c4d.png")]
    prompt = render_prompt(tools, history, "detect the edges", steps)
    parts = [
        "GPT4Tools can handle various text and visual tasks",
        "TOOLS:\n------\n\nGPT4Tools has access to the following tools:\n\n> Edge Detection On Image: useful when",
        "\n> Get Photo Description: useful when you want to know what is inside the photo.",
        "Action: the action to take, should be one of [Edge Detection On Image, Get Photo Description]",
        "Thought: Do I need to use a tool? No\nAI: [your response here]",
        "Previous conversation:\n\nHuman: Provide an image named image/1a2b3c4d.png. The description is: a cat. "
        "Understand the image using tools.\nAI: Received.\nHuman: hi\nAI: hello\n\nNew input: detect the edges\n",
        "Let's think step by step.\nThought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\n"
        "Action Input: image/1a2b3c4d.png\nObservation: image/0f0f0f0f_edge_1a2b3c4d_1a2b3c4d.png\n",
    ]
    positions = [prompt.index(p) for p in parts]
    assert positions == sorted(positions)
    assert prompt.endswith("Observation: image/0f0f0f0f_edge_1a2b3c4d_1a2b3c4d.png\n")


def test_image_turn_without_caption():
    assert image_turn("image/1a2b3c4d.png", None).human == (
        "Provide an image named image/1a2b3c4d.png. Understand the image using tools.")


@pytest.mark.parametrize("text, expected", [
    ("Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\nAction Input: image/ab.png",
     Step("Do I need to use a tool? Yes", "Edge Detection On Image", "image/ab.png")),
    (" Do I need to use a tool? Yes\nAction: `Edge Detection On Image`\n\nAction Input: \"image/ab.png\"\n",
     Step("Do I need to use a tool? Yes", "Edge Detection On Image", "image/ab.png")),
    ("Thought: Do I need to use a tool? Yes\nAction: X\nAction Input: a, b\nObservation: fake\nmore",
     Step("Do I need to use a tool? Yes", "X", "a, b")),
    ("Thought: Do I need to use a tool? No\nAI: It is a cat.", Final("Do I need to use a tool? No", "It is a cat.")),
    ("AI: first\nAI: second line", Final("AI: first", "second line")),
])
def test_parse_step(text, expected):
    assert parse_step(text) == expected


@pytest.mark.parametrize("text", ["", "I think it is a cat.", "Thought: Do I need to use a tool? No\nAI:   ",
                                  "Action: \nAction Input: x", "Observation: only this"])
def test_parse_errors_explain_the_format(text):
    result = parse_step(text)
    assert isinstance(result, ParseError)
    assert "Action Input" in result.message and "AI:" in result.message


OCR = "OPEN 24 HOURS; Main St. Pharmacy; EXIT"


@pytest.mark.parametrize("looping, kept", [
    # the OCR result echoed three times, no full stop between the copies (the reply of issue 32)
    (f"The text in the image reads: {OCR} " * 3, f"The text in the image reads: {OCR}"),
    # one sentence over and over, cut off by the token limit
    ("The image shows a cat sitting on a red sofa. " * 5 + "The image shows a c",
     "The image shows a cat sitting on a red sofa."),
    # a sentence that comes back after another one
    ("The sign says STOP. It is a traffic sign at a crossing. The sign says STOP. It is a traffic",
     "The sign says STOP. It is a traffic sign at a crossing."),
    # a run-on phrase without punctuation
    ("I found the edges of the cat and saved them as image/1a2b3c4d_edge_0a0b0c0d_0a0b0c0d.png and "
     "I found the edges of the cat and saved them as image/1a2b3c4d_edge_0a0b0c0d_0a0b0c0d.png and I found the",
     "I found the edges of the cat and saved them as image/1a2b3c4d_edge_0a0b0c0d_0a0b0c0d.png and"),
    # the same sentence on its own line, in another case
    ("Found 2 text lines: SALE and 50% OFF\nfound 2 text lines: SALE and 50% off",
     "Found 2 text lines: SALE and 50% OFF"),
])
def test_trim_repetition_keeps_the_first_copy_of_a_looping_answer(looping, kept):
    assert trim_repetition(looping) == kept


@pytest.mark.parametrize("answer", [
    "It is a cat.",
    "Yes. Yes. The cat is very, very, very fluffy.",  # short sentences and words may repeat
    "The edges are in image/1a2b3c4d_edge_0a0b0c0d_0a0b0c0d.png and the depth is in "
    "image/5e6f7a8b_depth_0a0b0c0d_0a0b0c0d.png.",
    "The sign reads 'No parking on this side of the street', so you cannot park on this side of the street.",
    "Found 4 text lines: EXIT; EXIT; EXIT; EXIT",
    "Step 1: crop the image. Step 2: detect the edges. Step 3: save the result.",
    "2 + 2 = 4. 4 + 4 = 8. 8 + 8 = 16.",
])
def test_trim_repetition_leaves_ordinary_answers_alone(answer):
    assert trim_repetition(answer) == answer


def test_stop_strings_are_gpt4tools():
    assert STOP == ("\nObservation:", "\n\tObservation:")
