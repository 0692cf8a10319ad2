"""Loaded controllers, shared by every session (weights are read-only), keyed by what was asked for."""
from __future__ import annotations

import threading

from .controller import Controller, load_controller


class ControllerPool:
    def __init__(self, default: tuple[str, str | None] = ("embedded", None)):
        self.default = default
        self._loaded: dict[tuple[str, str | None], Controller] = {}
        self._lock = threading.Lock()

    def add(self, key: tuple[str, str | None], controller: Controller) -> None:
        self._loaded[key] = controller

    def get(self, key: tuple[str, str | None] | None = None) -> Controller:
        """The controller for (spec, adapter), loading it on first request; raises ControllerError."""
        key = key or self.default
        with self._lock:
            if key not in self._loaded:
                self._loaded[key] = load_controller(key[0], adapter=key[1])
            return self._loaded[key]
