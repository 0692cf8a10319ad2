"""The Review tab in a real browser (Debian's chromium through Playwright): decisions by keyboard."""
import json
from pathlib import Path

import httpx

import pytest

from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from app import build_app
from conftest import chromium_page, free_port, needs_chromium
from scripted import ScriptedController
from training.data.records import GoldStep, Record, Source
from training.data.review_store import ReviewStore
from training.ui import HOTKEYS
from visual_tools import ToolRegistry

pytestmark = needs_chromium
ASSETS = Path(__file__).resolve().parent.parent / "assets"


@pytest.fixture
def page(tmp_path):
    store = ReviewStore(tmp_path / "review.sqlite")
    store.add([Record(id=f"r{i}", image=str(ASSETS / "chelsea.png"), image_name="image/0000000a.png",
                      tools=["Edge Detection On Image"], instruction=f"Find the edges, take {i}",
                      steps=[GoldStep(tool="Edge Detection On Image", args=["image/0000000a.png"],
                                      observation="image/0000000b_edge_0000000a_0000000a.png")],
                      answer="Here: image/0000000b_edge_0000000a_0000000a.png", source=Source(teacher="template"))
               for i in range(4)])
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController(["Thought: Do I need to use a tool? No\nAI: hi"]))
    demo = build_app(ToolRegistry.from_load("Image2Canny_cpu"), pool, review_store=store)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        head=HOTKEYS)
    try:
        with chromium_page(tmp_path) as page:
            page.goto(f"http://127.0.0.1:{port}/")
            yield page, store
    finally:
        demo.close()


def test_review_with_the_keyboard(page):
    page, store = page
    page.get_by_role("tab", name="Review").click()
    page.get_by_label("Reviewer").fill("ann")
    instruction = page.locator("#review-instruction textarea")
    instruction.wait_for()
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 0')")
    page.locator("body").click(position={"x": 5, "y": 5})  # focus outside the text boxes
    page.keyboard.press("a")  # accept
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 1')")
    page.keyboard.press("Space")  # skip
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 2')")
    page.keyboard.press("e")  # edit the instruction, save with ctrl+s
    instruction.fill("Detect the edges of the cat")
    page.keyboard.press("Control+s")
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 3')")
    page.locator("#review-reason textarea, #review-reason input").first.fill("too easy")
    page.keyboard.press("Enter")  # Enter in the reason box rejects
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 1')")
    statuses = {r.id: (r.status, r.reviewer, r.instruction) for r in store.records()}
    assert statuses["r0"][:2] == ("accepted", "ann")
    assert statuses["r1"][0] == "pending"
    assert statuses["r2"] == ("accepted", "ann", "Detect the edges of the cat")
    assert statuses["r3"][:2] == ("rejected", "ann")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("u")  # undo the rejection
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 3')")
    assert store.get("r3").record.status == "pending"
    from playwright.sync_api import expect
    page.get_by_role("button", name="Export JSONL").click()  # the accepted records, as a file to download
    link = page.locator("a[href$='reviewed.jsonl']")
    expect(link).to_be_visible(timeout=30000)
    exported = [json.loads(line) for line in httpx.get(link.get_attribute("href")).text.splitlines()]
    assert sorted((r["id"], r["status"]) for r in exported) == [("r0", "accepted"), ("r2", "accepted")]


def test_a_decision_without_a_name_is_a_warning_alone(page):
    from playwright.sync_api import expect
    page, store = page
    page.get_by_role("tab", name="Review").click()
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 0')")
    image = page.locator("#review-image img")
    expect(image).to_be_visible()
    shown = image.get_attribute("src"), page.locator("#review-instruction textarea").input_value()
    page.locator("#review-accept").click()  # no reviewer name typed
    expect(page.locator(".toast-body").filter(has_text="enter your name as reviewer first")).to_be_visible()
    expect(page.locator(".toast-title")).to_have_text(["Warning"])
    expect(page.get_by_text("Error", exact=True)).to_have_count(0)  # no error badge over any panel
    expect(image).to_be_visible()
    assert (image.get_attribute("src"), page.locator("#review-instruction textarea").input_value()) == shown
    assert store.get("r0").record.status == "pending"
    page.get_by_label("Reviewer").fill("ann")  # the record on screen is still the one decided
    page.locator("#review-accept").click()
    page.wait_for_function("document.querySelector('#review-instruction textarea').value.includes('take 1')")
    assert (store.get("r0").record.status, store.get("r0").record.reviewer) == ("accepted", "ann")
