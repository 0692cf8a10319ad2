"""The Chat tab as gradio_client sees it: send a turn, read the messages back."""
from __future__ import annotations

from pathlib import Path

from gradio_client import Client, handle_file


def texts(messages: list[dict]) -> str:
    return "\n".join(block.get("text", "") for m in messages for block in m["content"])


def files(messages: list[dict]) -> list[dict]:
    return [block for m in messages for block in m["content"] if block.get("type") == "file"]


def chat(client: Client, text: str, image: str | Path | None = None) -> list[dict]:
    """One turn: the message (and image), then the agent's answer; returns all the session's messages."""
    message = {"text": text, "files": [handle_file(str(image))] if image else []}
    client.predict(message, api_name="/add_message")
    return client.predict(api_name="/respond")
