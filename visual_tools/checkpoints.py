"""Where a tool's checkpoint lives: a local folder, or the Hugging Face cache (never a download)."""
from __future__ import annotations

from pathlib import Path

from huggingface_hub import snapshot_download, try_to_load_from_cache


def locate(checkpoint: str, filename: str = "config.json") -> str | None:
    """A local folder holding `filename` of `checkpoint` (a folder, or a hub id in the cache), else None."""
    folder = Path(checkpoint).expanduser()
    if folder.is_dir():
        return str(folder) if filename == "config.json" or (folder / filename).is_file() else None
    try:
        cached = try_to_load_from_cache(checkpoint, filename)
    except ValueError:  # not a valid repo id
        return None
    return str(Path(cached).parent) if isinstance(cached, str) else None


def hub_availability(tool: type, checkpoint: str | None, filename: str = "config.json") -> tuple[bool, str]:
    if checkpoint and locate(checkpoint, filename):
        return True, ""
    return False, (f"needs {checkpoint}; run `python -m visual_tools fetch {tool.__name__}` on a machine "
                   f"with network, or set {tool.checkpoint_env()} to a local folder")


def fetch(checkpoint: str, files: tuple[str, ...] = ()) -> str:
    """Download a hub checkpoint (only `files` of it, when given) into the Hugging Face cache (needs network)."""
    return snapshot_download(checkpoint, allow_patterns=list(files) or None)
