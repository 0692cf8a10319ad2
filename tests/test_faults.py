"""Concurrency and faults on loopback, each test bounded: eight users at once, a tool that hangs or raises while
others chat, the controller server dying mid-turn, the app killed during review, the image folder filling up."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from chat_client import chat, files, texts
from conftest import free_port, launched, wait_for
from gradio_client import Client
from PIL import Image
from scripted import ScriptedController, last_image

from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from app import build_app
from training.data.records import GoldStep, Record, Source
from training.data.review_store import ReviewStore
from visual_tools import Input, Tool, ToolRegistry, data_home
from visual_tools.canny import Image2Canny
from visual_tools.image_store import SWEEPER

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 5.0  # the app's per-call tool timeout in these tests


class Hang(Tool):
    """Never answers in time (until the test lets it go)."""
    name, description, output = "Hang On Image", "waits", "text"
    purpose = "waits"
    inputs = (Input("image_path", "image_path"),)
    entered, release = threading.Event(), threading.Event()

    def forward(self, image_path):
        self.entered.set()
        self.release.wait(60)
        return "too late"


class Boom(Tool):
    name, description, output = "Boom On Image", "raises", "text"
    purpose = "raises"
    inputs = (Input("image_path", "image_path"),)

    def forward(self, image_path):
        raise RuntimeError("CUDA out of memory")


def policy(prompt: str) -> str:
    """A tuned model: the tool the user names ('hang', 'boom', else edges) on the newest image, then an answer
    that repeats the observation and the user's words, and says an edge map is one."""
    turn = prompt.rpartition("New input:")[2]
    asked = turn.partition("\n")[0].strip()
    if "\nObservation: " in turn:
        seen = turn.rpartition("Observation: ")[2].strip()
        kind = ", an edge map" if "_edge_" in seen else ""
        return f"Thought: Do I need to use a tool? No\nAI: {asked} -> {seen}{kind}"
    tool = {"hang": "Hang On Image", "boom": "Boom On Image"}.get(asked.split()[0], "Edge Detection On Image")
    return f"Thought: Do I need to use a tool? Yes\nAction: {tool}\nAction Input: {last_image(prompt)}"


@pytest.fixture(scope="module")
def app_url():
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, ScriptedController([policy]))
    app = build_app(ToolRegistry([Image2Canny(), Hang(), Boom()]), pool, tool_timeout=TIMEOUT)
    with launched(app) as url:
        yield url
        Hang.release.set()  # the hung call ends before the app does


def photo(folder: Path, i: int) -> Path:
    """A different picture per user: a square whose size says whose it is."""
    image = Image.new("RGB", (256, 256))
    image.paste((255, 255, 255), (20, 20, 40 + 20 * i, 40 + 20 * i))
    path = folder / f"user{i}.png"
    image.save(path)
    return path


def test_eight_users_chat_at_once(app_url, tmp_path):
    """Two turns each, all at once: each user sees only their own images and words, and every turn is there."""
    def user(i: int) -> list[dict]:
        client = Client(app_url, verbose=False)
        chat(client, f"edges of picture {i}", photo(tmp_path, i))
        return chat(client, f"again for user {i}")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(user, range(8), timeout=300))
    uploads = [files(m)[0]["alt_text"] for m in results]
    assert len(set(uploads)) == 8
    for i, messages in enumerate(results):
        shown = texts(messages)
        assert f"edges of picture {i} -> " in shown and f"again for user {i} -> " in shown  # both answers
        assert not re.search(rf"picture [^{i}]\b|user [^{i}]\b", shown)  # no one else's words
        images = [f["alt_text"] for f in files(messages)]
        assert len(images) == 3 and all(uploads[i][6:14] in name for name in images)  # upload + 2 edge maps
        assert not any(u in shown for j, u in enumerate(uploads) if j != i)


def test_a_hanging_and_a_raising_tool_while_others_chat(app_url, box_image):
    """While one user's tool hangs, the others' turns finish before its timeout does (clients built first, so
    only the turns themselves are timed)."""
    hanging_client, boom_client, edges_client = (Client(app_url, verbose=False) for _ in range(3))
    with ThreadPoolExecutor(3) as pool:
        def timed(client: Client, text: str) -> tuple[list[dict], float]:
            return chat(client, text, box_image), time.monotonic()

        hanging = pool.submit(timed, hanging_client, "hang please")
        assert Hang.entered.wait(60)
        hang_started = time.monotonic()
        boom_job = pool.submit(timed, boom_client, "boom now")
        edges_job = pool.submit(timed, edges_client, "edges please")
        (boom, _), (edges, edges_done) = boom_job.result(120), edges_job.result(120)
        hung, hang_done = hanging.result(120)
    assert f"Hang On Image did not answer within {TIMEOUT:g} s" in texts(hung)
    assert "hang please -> Error: Hang On Image did not answer" in texts(hung)  # the model read it and answered
    assert hang_done - hang_started >= TIMEOUT * 0.9 and edges_done < hang_done  # the others did not wait
    assert "Boom On Image failed: RuntimeError: CUDA out of memory" in texts(boom)
    assert re.search(r"edges please -> image/[0-9a-f]{8}_edge_", texts(edges))


def test_the_controller_server_dies_mid_turn(app_url, box_image, tiny_llama):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "agent", "serve", "--controller", str(tiny_llama),
                               "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        wait_for(lambda: httpx.get(f"{url}/models").status_code == 200, 120)
        client = Client(app_url, verbose=False)
        assert "Using" in client.predict("openai", url, "", api_name="/load_controller")
        client.predict({"text": "describe it", "files": []}, api_name="/add_message")
        job = client.submit(api_name="/respond")
        wait_for(lambda: job.outputs(), 60, every=0.01)  # the first streamed piece of the first step
        server.kill()
        messages = job.result(timeout=120)
    finally:
        server.kill()
        server.wait()
    shown = texts(messages)
    assert re.search(r"Controller error: (the stream from .* broke off|cannot reach the controller)", shown), shown
    assert "Controller error" in texts(chat(client, "still there?"))  # the same session: the same clear message
    assert re.search(r"edges -> image/[0-9a-f]{8}_edge_", texts(chat(Client(app_url, verbose=False), "edges",
                                                                      box_image)))


def review_records(n: int) -> list[Record]:
    edge = "image/0000000b_edge_0000000a_0000000a.png"
    return [Record(id=f"r{i}", image=str(ROOT / "assets" / "chelsea.png"), image_name="image/0000000a.png",
                   tools=["Edge Detection On Image"], instruction=f"Find the edges, take {i}",
                   steps=[GoldStep(tool="Edge Detection On Image", args=["image/0000000a.png"], observation=edge)],
                   answer=f"Here: {edge}", source=Source(teacher="template")) for i in range(n)]


def launch_app(home: Path, port: int, tiny_llama: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "app.py", "--controller", str(tiny_llama), "--load", "Image2Canny_cpu",
                             "--port", str(port)], cwd=ROOT, env={**os.environ, "TOOLSMITH_HOME": str(home)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def test_the_app_killed_during_review_loses_no_decision(tmp_path, tiny_llama):
    home, port = tmp_path / "home", free_port()
    ReviewStore(home / "review.sqlite").add(review_records(6))
    filters = ("pending", "all", "all", "all")
    app = launch_app(home, port, tiny_llama)
    try:
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/").status_code == 200, 180, every=0.5)
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        client.predict(*filters, api_name="/review_refresh")
        client.predict("ann", *filters, api_name="/review_accept")
        view = client.predict("ann", *filters, api_name="/review_accept")
        trace = view[5]
        client.predict("ann", "Edges of the cat, please", trace, *filters, api_name="/review_edit")
        client.predict("ann", "unclear", *filters, api_name="/review_reject")
        os.killpg(app.pid, signal.SIGKILL)  # no shutdown: what a crash or an OOM kill does
        app.wait(30)
        app = launch_app(home, port, tiny_llama)
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/").status_code == 200, 180, every=0.5)
        after = Client(f"http://127.0.0.1:{port}/", verbose=False)
        progress = after.predict(*filters, api_name="/review_refresh")[-1]
    finally:
        os.killpg(app.pid, signal.SIGKILL)
        app.wait(30)
    decided = {r.id: (r.status, r.reviewer, r.instruction) for r in ReviewStore(home / "review.sqlite").records()}
    assert decided["r0"][:2] == decided["r1"][:2] == ("accepted", "ann")
    assert decided["r2"] == ("accepted", "ann", "Edges of the cat, please")
    assert decided["r3"][:2] == ("rejected", "ann") and decided["r4"][0] == decided["r5"][0] == "pending"
    assert "**4 /" in progress and "❌ 1" in progress  # the restarted app shows them


def test_old_session_images_are_swept_when_the_folder_fills(app_url, box_image, monkeypatch):
    sessions = data_home() / "sessions"
    monkeypatch.setattr(SWEEPER, "interval_s", 0)
    monkeypatch.setattr(SWEEPER, "keep_recent_s", 0)
    monkeypatch.setattr(SWEEPER, "max_bytes", 1)  # every earlier session is over the limit
    first = Client(app_url, verbose=False)
    shown = chat(first, "edges", box_image)
    mine = next(sessions.glob(f"*/{files(shown)[0]['alt_text']}")).parent.parent  # <sessions>/<id>/image/x.png
    assert mine.is_dir()
    chat(Client(app_url, verbose=False), "edges", box_image)  # a new session sweeps the others
    assert not mine.exists() and len(list(sessions.iterdir())) == 1
    again = chat(first, "edges again", box_image)  # the swept user is told, and starts afresh
    assert "images were cleaned up while it was idle" in texts(again) and len(files(again)) == 2
