"""Hugging Face Spaces' ZeroGPU: `@spaces.GPU` on the functions that run models, where `spaces` is installed.

On a ZeroGPU Space the decorator attaches a GPU for the call; elsewhere `spaces.GPU` returns the function
itself, and without the package `on_gpu` does the same.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def on_gpu(fn: F, duration: int = 120) -> F:
    """`fn` under `spaces.GPU(duration=…)` (seconds a call may hold the GPU), or `fn` unchanged."""
    try:
        import spaces
    except ImportError:
        return fn
    return spaces.GPU(duration=duration)(fn)
