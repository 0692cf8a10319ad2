"""One flow per tab in a real browser (Debian's chromium through Playwright), against the app on 127.0.0.1:
Chat, Tools, Data, Train and Evaluate (Review's keyboard flow is in test_review_browser.py)."""
from __future__ import annotations

import json
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
LONG = 120_000  # ms: a page waits this long at most for a model step


def policy(prompt: str) -> str:
    """Edge Detection on the newest image, then an answer naming the result."""
    turn = prompt.rpartition("New input:")[2]
    newest = re.findall(r"image/[0-9a-f_a-z-]+\.png", prompt)[-1]
    if "\nObservation: " in turn:
        return f"Thought: Do I need to use a tool? No\nAI: The edges are in {newest}"
    return f"Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\nAction Input: {newest}"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController([policy]))
    app = build_app(ToolRegistry.from_load("Image2Canny_cpu,CropImage_cpu"), pool,
                    review_store=ReviewStore(folder / "review.sqlite"))
    with launched(app) as url:
        yield url


@pytest.fixture
def page(url, tmp_path):
    with chromium_page(tmp_path) as page:
        page.goto(url)
        yield page


def test_chat_upload_a_photo_and_see_the_steps_and_the_edges(page):
    from playwright.sync_api import expect
    page.locator("#chat-input input[type=file]").set_input_files(str(ASSETS / "chelsea.png"))
    page.locator("#chat-input textarea").fill("Detect the edges of this image.")
    page.locator("#chat-input textarea").press("Enter")
    expect(page.get_by_text("Step 1: thought")).to_be_visible(timeout=LONG)  # the Thought, collapsed
    expect(page.get_by_text("Edge Detection On Image").first).to_be_visible()
    expect(page.locator("img[src*='_edge_']").first).to_be_visible(timeout=LONG)  # the output, inline
    expect(page.get_by_text(re.compile(r"The edges are in image/[0-9a-f]{8}_edge_"))).to_be_visible()


def test_tools_run_an_offline_tool(page):
    from playwright.sync_api import expect
    page.get_by_role("tab", name="Tools").click()
    page.locator("#tool-image input[type=file]").set_input_files(str(ASSETS / "astronaut.png"))
    expect(page.locator("#tool-image img")).to_be_visible(timeout=LONG)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_label("Observation (what the model would read)")).to_have_value(
        re.compile(r"image/[0-9a-f]{8}_edge_"), timeout=LONG)
    expect(page.locator("#tool-output img")).to_be_visible()


def test_tools_status_is_on_screen_at_laptop_width(tmp_path):
    """Every tool, most of them missing with a long reason: the Status column is inside a 1280 px window."""
    from playwright.sync_api import expect
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController([policy]))
    app = build_app(ToolRegistry.from_load(), pool, review_store=ReviewStore(tmp_path / "review.sqlite"))
    with launched(app) as url, chromium_page(tmp_path) as page:
        page.set_viewport_size({"width": 1280, "height": 720})
        page.goto(url)
        page.get_by_role("tab", name="Tools").click()
        header = page.get_by_role("columnheader", name="Status")
        expect(header).to_be_visible()
        reason = page.get_by_role("gridcell").filter(has_text="python -m visual_tools fetch").first
        expect(reason).to_be_visible()
        for box in (header.bounding_box(), reason.bounding_box()):
            assert 0 <= box["x"] and box["x"] + box["width"] <= 1280
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 1280  # no horizontal scrolling


def test_data_generate_a_few_records(page):
    from playwright.sync_api import expect
    page.get_by_role("tab", name="Data").click()
    page.get_by_label("Instructions (about)").fill("6")
    page.get_by_label("Per teacher call").fill("6")
    page.get_by_label("Dataset name").fill("browser")
    page.get_by_role("button", name="Generate", exact=True).click()
    expect(page.get_by_text(re.compile(r"\d+ new records queued for review"))).to_be_visible(timeout=LONG)
    expect(page.get_by_text("browser.jsonl").first).to_be_visible()


def test_train_start_a_tiny_run_see_the_loss_plot_move_and_stop(page, tiny_llama, tmp_path):
    from playwright.sync_api import expect
    from test_train_eval_ui import dataset
    data = dataset(tmp_path)
    page.get_by_role("tab", name="Train").click()
    page.get_by_label("Data (a records JSONL, or the review store's accepted)").fill(str(data))
    page.get_by_label("Base model ('embedded', a hub id or a folder)").fill(str(tiny_llama))
    page.get_by_label("Run name").fill("browser-run")
    page.get_by_label("Max steps (-1: epochs)").fill("100000")
    page.get_by_label("Learning rate").fill("0.005")
    page.get_by_role("button", name="Start", exact=True).first.click()
    status = page.get_by_text(re.compile(r"browser-run: running.*step \d+"))
    expect(status).to_be_visible(timeout=LONG)
    plot = page.locator("#train-loss")
    expect(plot.locator("canvas, svg").first).to_be_visible(timeout=LONG)
    first_step = int(re.search(r"step (\d+)", status.inner_text()).group(1))
    before = plot.screenshot()
    page.wait_for_function(f"() => /step (\\d+)/.exec(document.body.innerText)?.[1] > {first_step + 3}",
                           timeout=LONG)
    page.wait_for_timeout(2500)  # the plot's next refresh (every 2 s)
    assert plot.screenshot() != before  # new loss points drawn
    page.get_by_role("button", name="Stop", exact=True).first.click()
    expect(page.get_by_text("browser-run: stopped")).to_be_visible(timeout=LONG)
    expect(page.get_by_label("Adapter", exact=True)).to_have_value(re.compile(r"browser-run/adapter$"))


def test_evaluate_lists_the_shipped_and_the_user_case_files_and_shows_the_success_rate_table(page, toolsmith_home):
    from playwright.sync_api import expect
    page.get_by_role("tab", name="Evaluate").click()
    expect(page.locator("#eval-chart")).to_be_visible()
    page.wait_for_timeout(1500)  # time to draw a chart, had it one to draw
    assert not page.evaluate("document.body.innerHTML.includes('NaN')")  # the empty chart says nothing misleading
    cases = toolsmith_home / "datasets" / "cases.jsonl"  # written after the page opened
    cases.parent.mkdir(exist_ok=True)
    cases.write_text("".join(json.dumps({
        "id": f"c{i}", "image": "image/1a2b3c4d.png", "input": "edges please", "tools": ["Edge Detection On Image"],
        "gold": [{"tool": "Edge Detection On Image", "args": ["image/1a2b3c4d.png"]}]}) + "\n" for i in range(3)))
    page.get_by_label("Cases (GPT4Tools JSON, records JSONL or a plain case JSONL)").click()
    options = page.get_by_role("option")
    expect(options.filter(has_text="cases.jsonl")).to_have_count(1)
    shown = options.all_inner_texts()
    assert [Path(o).relative_to(ASSETS.parent).as_posix() for o in shown[:2]] == [
        "assets/eval/blind.jsonl", "assets/eval/handwritten.jsonl"]
    options.filter(has_text="cases.jsonl").click()
    page.get_by_label("Controller ('embedded', a model id/folder or a URL)").fill("scripted")
    page.get_by_role("button", name="Evaluate", exact=True).click()
    table = page.locator("table").filter(has_text="overall")  # the summary (the predictions table has none)
    expect(table).to_be_visible(timeout=LONG)
    expect(table.locator("tr").filter(has_text="overall")).to_have_text(re.compile(r"overall\s*3(\s*100\.0){4}"))
    expect(page.locator("svg text").filter(has_text="overall").first).to_be_visible()  # the chart's legend
    assert not page.evaluate("document.body.innerHTML.includes('NaN')")


def test_evaluate_runs_the_multi_turn_set_and_shows_the_per_turn_table(page):
    from playwright.sync_api import expect
    page.get_by_role("tab", name="Evaluate").click()
    page.get_by_text("Conversations: success per turn, repeated answers, missing tools").click()
    panel = page.locator("#eval-conversations")
    panel.get_by_label("Controller ('embedded', a model id/folder or a URL)").fill("scripted")
    panel.get_by_label("Conversations (0: all)").fill("1")
    panel.get_by_role("button", name="Evaluate conversations").click()
    table = page.locator("table").filter(has_text="turns ≥ 2")
    expect(table).to_be_visible(timeout=LONG)
    # mt-01: edges, then a sketch, a product and thanks; the policy only ever finds edges
    expect(table.locator("tr").filter(has_text=re.compile(r"^\s*1\s"))).to_have_text(
        re.compile(r"1\s+1\s+100\.0\s+100\.0\s+0"))
    # the app loaded Edge Detection and Crop only: the sketch and the Calculator are not here, and cannot be named
    expect(page.get_by_text(re.compile(r"Unavailable tool: 0 of 2 answered"))).to_be_visible()
