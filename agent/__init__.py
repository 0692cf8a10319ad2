"""The controller LLM, the GPT4Tools prompt, and the Thought/Action/Observation loop."""
from .controller import Capability, Controller, ControllerError
from .factory import ControllerSpec, load_controller
from .loop import Agent
from .session import ChatSession

__all__ = ["Capability", "Controller", "ControllerError", "ControllerSpec", "load_controller", "Agent", "ChatSession"]
