"""The controller LLM, the GPT4Tools prompt, and the Thought/Action/Observation loop."""
from .controller import Controller, ControllerError, load_controller
from .loop import Agent
from .session import ChatSession

__all__ = ["Controller", "ControllerError", "load_controller", "Agent", "ChatSession"]
