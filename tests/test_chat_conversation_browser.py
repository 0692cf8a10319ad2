"""A ten-turn conversation in a real browser against a launched app, with a controller that copies its earlier
answers (as the 135M model did): no answer repeats an earlier one, the Calculator's number is said, and a request
for a tool without weights is answered with what it needs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import chromium_page, launched, needs_chromium
from scripted import ScriptedController

from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from app import build_app
from training.data.review_store import ReviewStore
from visual_tools import ToolRegistry

pytestmark = needs_chromium
ASSETS = Path(__file__).resolve().parent.parent / "assets"
LONG = 120_000  # ms
CALL = "Thought: Do I need to use a tool? Yes\nAction: {}\nAction Input: {}"
FINAL = "Thought: Do I need to use a tool? No\nAI: {}"
TURNS = ["Detect the edges of this image.", "now make that a sketch", "What is 19 * 29?", "thanks!",
         "paint me a brand-new picture of a castle at sunset", "what weekday is 2027-03-14?",
         "crop the top left quarter of the sketch", "and what is 12 * 12?", "perfect, that is all I needed",
         "ok bye"]


def copycat(prompt: str) -> str:
    """Calls the tool its request names; otherwise, and after every Observation, copies its last earlier answer."""
    head, _, turn = prompt.rpartition("New input:")
    request = turn.strip().split("\n")[0].lower()
    earlier = [a for a in re.findall(r"\nAI: (.*)", head.partition("Previous conversation:")[2]) if a != "Received."]
    newest = re.findall(r"image/[0-9a-f_a-z-]+\.png", prompt)[-1]
    if "\nObservation: " in turn:
        return FINAL.format(earlier[-1] if earlier else "Done.")
    if product := re.search(r"\d+ \* \d+", request):
        return CALL.format("Calculator", product.group(0))
    if day := re.search(r"\d{4}-\d\d-\d\d", request):
        return CALL.format("Calendar", day.group(0))
    for word, tool, extra in (("edges", "Edge Detection On Image", ""), ("sketch", "Sketch Detection On Image", ""),
                              ("crop", "Crop Image", ", [0, 0, 0.5, 0.5]")):
        if word in request and not (word == "sketch" and "crop" in request):
            return CALL.format(tool, newest + extra)
    if earlier:
        return FINAL.format(earlier[-1])
    return FINAL.format("Goodbye!" if "bye" in request else "You're welcome!" if "thank" in request
                        else "Glad to help.")


@pytest.fixture
def page(tmp_path):
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController([copycat]))
    registry = ToolRegistry.from_load("Image2Canny_cpu,Image2Scribble_cpu,CropImage_cpu,Calculator_cpu,Calendar_cpu,"
                                      "Text2Image_cpu")
    app = build_app(registry, pool, review_store=ReviewStore(tmp_path / "review.sqlite"))
    with launched(app) as url, chromium_page(tmp_path) as page:
        page.goto(url)
        yield page


def test_a_ten_turn_conversation_stays_honest(page):
    from playwright.sync_api import expect
    box = page.locator("#chat-input textarea")
    page.locator("#chat-input input[type=file]").set_input_files(str(ASSETS / "chelsea.png"))
    rows = page.locator(".bot-row")  # the upload's "Received image/….png.", then one per turn
    for number, text in enumerate(TURNS, 1):
        box.fill(text)
        box.press("Enter")
        expect(rows).to_have_count(number + 1, timeout=LONG)
        expect(rows.last).not_to_contain_text("thinking…", timeout=LONG)
        expect(box).to_be_editable(timeout=LONG)
    answers = [row.strip().split("\n")[-1] for row in rows.all_inner_texts()[1:]]
    assert len(answers) == len(TURNS) and len(set(answers)) == len(answers), answers  # none repeats an earlier one
    assert answers[0].startswith("Here is the edge map: image/") and answers[1].startswith("Here is the sketch: ")
    assert answers[2] == "19 * 29 = 551" and answers[7] == "12 * 12 = 144"  # not the copied earlier answer
    assert answers[3] == "You're welcome!" and answers[5] == "2027-03-14 is a Sunday."
    assert answers[4].startswith("I can't do that here: it needs the tool Generate Image From User Input Text")
    expect(page.get_by_text("needs Generate Image From User Input Text: not loaded here")).to_be_visible()
    assert "python -m visual_tools fetch Text2Image" in answers[4] and "--load Text2Image_cuda:0" in answers[4]
