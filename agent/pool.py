"""Loaded controllers, shared by every session (weights are read-only), keyed by their ControllerSpec."""
from __future__ import annotations

import threading
from dataclasses import replace

from .controller import Capability, Controller
from .factory import ControllerSpec, engine_of, load_controller, with_capability


class ControllerPool:
    def __init__(self, default: ControllerSpec | None = None):
        self.default = default or ControllerSpec()
        self._loaded: dict[ControllerSpec, Controller] = {}
        self._lock = threading.Lock()

    def add(self, spec: ControllerSpec, controller: Controller) -> None:
        self._loaded[spec] = controller

    def get(self, spec: ControllerSpec | None = None, need: Capability | None = None) -> Controller:
        """The controller for `spec` (default: the app's), loaded on first request; raises ControllerError. With
        `need`: where that controller lacks it, the same model on an engine that has it (loaded likewise); the
        controller as it is where no engine has it (the feature then says what it needs)."""
        spec = spec or self.default
        with self._lock:
            controller = self._get(spec)
            if need is not None and need not in controller.capabilities:
                other = with_capability(spec, need)
                controller = self._get(other) if other else controller
            return controller

    def _get(self, spec: ControllerSpec) -> Controller:
        if spec not in self._loaded:
            controller = self._loaded[spec] = load_controller(spec)
            if spec.engine == "auto" and (engine := engine_of(controller)):  # the same model asked for by its engine
                self._loaded.setdefault(replace(spec, engine=engine), controller)
        return self._loaded[spec]
