from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

from tiny_models import build_tiny_blip, build_tiny_llama  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def toolsmith_home(tmp_path_factory) -> Path:
    """Every test writes under one temporary data folder (models converted once per run)."""
    home = tmp_path_factory.mktemp("toolsmith-home")
    os.environ["TOOLSMITH_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_blip(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-blip")
    return {"caption": build_tiny_blip(root / "caption", "caption"), "vqa": build_tiny_blip(root / "vqa", "vqa")}


@pytest.fixture
def box_image(tmp_path) -> Path:
    """A white rectangle on black: its edges are known."""
    pixels = np.zeros((300, 400, 3), np.uint8)
    pixels[60:240, 100:300] = 255
    path = tmp_path / "box.png"
    Image.fromarray(pixels).save(path)
    return path


@pytest.fixture
def store():
    from visual_tools import ImageStore
    s = ImageStore.new_session()
    yield s
    s.delete()


def wait_for(ready, timeout: float, every: float = 0.2) -> None:
    """Poll `ready()` (exceptions count as not ready) until it is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except Exception:
            pass
        time.sleep(every)
    raise TimeoutError(f"not ready after {timeout} s")


def python_output(code: str) -> str:
    """The last line a fresh Python process running `code` in the repository prints (it must succeed): what a
    later start imports is seen only in a process of its own."""
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()[-1]

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def launched(app, **launch):
    """The app on a free loopback port, queued and serving session images as app.main() launches it; its URL."""
    from visual_tools import data_home
    port = free_port()
    app.queue(default_concurrency_limit=4).launch(server_name="127.0.0.1", server_port=port, quiet=True,
                                                  prevent_thread_lock=True,
                                                  allowed_paths=[str(data_home() / "sessions")], **launch)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        app.close()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt install chromium)")


@contextmanager
def chromium_page(tmp_path: Path):
    """A page in headless Debian chromium with a fresh profile; a screenshot is saved when the test fails."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium"), executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        try:
            yield page
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"))
            raise
        finally:
            browser.close()
