"""The visual tools, their registry and the per-session image store."""
from .base import Input, Tool, ToolInputError
from .image_store import ImageInputError, ImageStore, data_home
from .invoke import ToolResult, ToolTimeout, invoke
from .registry import TEXT_TOOL_CLASSES, TOOL_CLASSES, VISUAL_TOOL_CLASSES, ToolRegistry, UnknownToolError, parse_load

__all__ = ["Input", "Tool", "ToolInputError", "ImageInputError", "ImageStore", "data_home", "ToolResult", "ToolTimeout",
           "invoke", "TOOL_CLASSES", "VISUAL_TOOL_CLASSES", "TEXT_TOOL_CLASSES", "ToolRegistry", "UnknownToolError",
           "parse_load"]
