"""Per-session image folder: upload names, provenance names for tool outputs, safe path resolution."""
from __future__ import annotations

import os
import re
import shutil
import threading
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from .base import ToolInputError

MAX_SIDE = 512  # GPT4Tools resizes uploads to fit 512x512, sides multiples of 64 (what SD expects)
MAX_PIXELS = 250_000_000  # refuse anything bigger than this before decoding it
IMAGE_NAME = re.compile(r"image/[0-9a-f]{8}(?:_[a-z0-9-]+_[0-9a-f]{8}_[0-9a-f]{8})?\.png")


def data_home() -> Path:
    """The one data folder (sessions, converted models, runs); `TOOLSMITH_HOME` moves it."""
    home = Path(os.environ.get("TOOLSMITH_HOME") or Path.home() / ".cache" / "toolsmith")
    home.mkdir(parents=True, exist_ok=True)
    return home


class ImageInputError(ToolInputError):
    """A path or upload the tools must not or cannot read; the message is shown to the user or model."""


def _new_id() -> str:
    return uuid.uuid4().hex[:8]


def output_name(op: str, parent: str | None, new_id: str | None = None) -> str:
    """Visual ChatGPT's provenance name `image/{new}_{op}_{parent}_{root}.png` (a plain new name without parent)."""
    new_id = new_id or _new_id()
    if parent is None:
        return f"image/{new_id}.png"
    stem = Path(parent).stem.split("_")
    root = stem[3] if len(stem) == 4 else stem[0]
    return f"image/{new_id}_{op}_{stem[0]}_{root}.png"


class ImageStore:
    """The images of one chat session, named as the model sees them: `image/<8 hex>.png`.

    Tool outputs get Visual ChatGPT's provenance names, `image/<new>_<op>_<parent>_<root>.png`.
    Every name is resolved inside this session's folder; anything else is refused.
    """

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        (self.root / "image").mkdir(parents=True, exist_ok=True)

    @classmethod
    def new_session(cls) -> "ImageStore":
        """A fresh session folder; old sessions are swept first (see `SessionSweeper`)."""
        root = data_home() / "sessions" / uuid.uuid4().hex
        SWEEPER(root.parent)
        return cls(root)

    def save_upload(self, source: str | Path | Image.Image) -> str:
        """Store an uploaded image (resized as GPT4Tools does) and return its name."""
        image = source if isinstance(source, Image.Image) else _open_untrusted(Path(source))
        image = ImageOps.exif_transpose(image).convert("RGB")
        w, h = image.size
        ratio = min(MAX_SIDE / w, MAX_SIDE / h)
        size = tuple(max(64, int(round(side * ratio / 64.0)) * 64) for side in (w, h))
        if image.size != size:
            image = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
        name = f"image/{_new_id()}.png"
        image.save(self.root / name, "PNG")
        return name

    def save_output(self, image: Image.Image, op: str, parent: str | None) -> str:
        """Store a tool's output image, named after the image it came from."""
        name = output_name(op, parent)
        image.save(self.root / name, "PNG")
        return name

    def resolve(self, name: str) -> Path:
        """Absolute path of an image name, refusing anything outside this session's image folder."""
        cleaned = name.strip().strip("`'\"").strip()
        if not cleaned:
            raise ImageInputError("an image file name is required, e.g. image/1a2b3c4d.png")
        if "\x00" in cleaned:
            raise ImageInputError(f"refused: {cleaned!r} is not a file name")
        candidate = Path(cleaned)
        if candidate.is_absolute() or ".." in candidate.parts:
            raise ImageInputError(f"refused: '{cleaned}' is outside this session's image folder")
        path = (self.root / candidate).resolve()
        if not path.is_relative_to(self.root / "image"):
            raise ImageInputError(f"refused: '{cleaned}' is outside this session's image folder")
        if not path.is_file():
            known = ", ".join(self.names()[-5:]) or "none yet"
            raise ImageInputError(f"no image named '{cleaned}' in this session (images: {known})")
        return path

    def names(self) -> list[str]:
        files = sorted((self.root / "image").glob("*.png"), key=lambda p: p.stat().st_mtime)
        return [f"image/{p.name}" for p in files]

    def delete(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class SessionSweeper:
    """Deletes session folders unused for `max_age_s`, then the least recently used ones until all sessions
    together hold at most `max_bytes` — never one used in the last `keep_recent_s` (someone is chatting there).
    Runs at most every `interval_s`, when a session starts. A browser that closes deletes its own folder at
    once; this catches the rest (crashes, restarts, idle tabs)."""
    max_age_s: float = 24 * 3600
    max_bytes: int = 2 * 1024**3
    interval_s: float = 60.0
    keep_recent_s: float = 300.0
    _last: float = field(default=float("-inf"), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, sessions: Path, force: bool = False) -> list[Path]:
        """Sweep `sessions` now if due (or forced); returns the folders deleted."""
        with self._lock:
            now = time.time()
            if not force and now - self._last < self.interval_s:
                return []
            self._last = now
            folders = []
            for root in sessions.glob("*/"):
                files = [p for p in root.rglob("*") if p.is_file()]
                used = max([root.stat().st_mtime] + [p.stat().st_mtime for p in files])
                folders.append((used, sum(p.stat().st_size for p in files), root))
            folders.sort()  # least recently used first
            total, deleted = sum(size for _, size, _ in folders), []
            for used, size, root in folders:
                if now - used > self.max_age_s or (total > self.max_bytes and now - used > self.keep_recent_s):
                    shutil.rmtree(root, ignore_errors=True)
                    total -= size
                    deleted.append(root)
            return deleted


SWEEPER = SessionSweeper()  # the app sets its limits from --session-max-age / --sessions-max-mb


def _open_untrusted(path: Path) -> Image.Image:
    """Open an uploaded file, turning every way it can be bad into one clear ImageInputError."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(path)
            if image.width * image.height > MAX_PIXELS:
                raise ImageInputError(
                    f"image too large: {image.width}x{image.height} pixels (limit {MAX_PIXELS:,})")
            image.draft("RGB", (MAX_SIDE * 2, MAX_SIDE * 2))  # JPEG: decode already shrunk
            image.load()
            return image
    except ImageInputError:
        raise
    except Image.DecompressionBombError:
        raise ImageInputError(f"image too large: {path.name} (limit {MAX_PIXELS:,} pixels)") from None
    except FileNotFoundError:
        raise ImageInputError(f"no such file: {path.name}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageInputError(f"not a readable image: {path.name} ({exc.__class__.__name__})") from None
