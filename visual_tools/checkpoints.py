"""Where a tool's checkpoint lives: a local folder, or the Hugging Face cache (never a download)."""
from __future__ import annotations

from pathlib import Path

from huggingface_hub import snapshot_download, try_to_load_from_cache


def locate(checkpoint: str) -> str | None:
    """A local path for `checkpoint` (a folder, or a hub id already in the cache), else None."""
    if Path(checkpoint).expanduser().is_dir():
        return str(Path(checkpoint).expanduser())
    try:
        cached = try_to_load_from_cache(checkpoint, "config.json")
    except ValueError:  # not a valid repo id
        return None
    return str(Path(cached).parent) if isinstance(cached, str) else None


def hub_availability(tool: type, checkpoint: str | None) -> tuple[bool, str]:
    if checkpoint and locate(checkpoint):
        return True, ""
    return False, (f"needs {checkpoint}; run `python -m visual_tools fetch {tool.__name__}` on a machine "
                   f"with network, or set {tool.checkpoint_env()} to a local folder")


def fetch(checkpoint: str) -> str:
    """Download a hub checkpoint into the Hugging Face cache (needs network)."""
    return snapshot_download(checkpoint)
