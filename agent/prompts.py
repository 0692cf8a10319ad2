"""The one GPT4Tools prompt renderer, shared by inference, dataset rendering and evaluation.

Wording is GPT4Tools' (gpt4tools_demo.py); assembly is LangChain 0.0.101's conversational agent:
prefix, tool list, format instructions and suffix joined by blank lines.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

HUMAN_PREFIX, AI_PREFIX = "Human", "AI"
STOP = ("\nObservation:", "\n\tObservation:")

PREFIX = """GPT4Tools can handle various text and visual tasks, such as answering questions and providing in-depth explanations and discussions. It generates human-like text and uses tools to indirectly understand images. When referring to images, GPT4Tools follows strict file name rules. To complete visual tasks, GPT4Tools uses tools and stays loyal to observation outputs. Users can provide new images to GPT4Tools with a description, but tools must be used for subsequent tasks.
TOOLS:
------

GPT4Tools has access to the following tools:"""

FORMAT_INSTRUCTIONS = """To use a tool, please use the following format:

```
Thought: Do I need to use a tool? Yes
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
```

When you have a response to say to the Human, or if you do not need to use a tool, you MUST use the format:

```
Thought: Do I need to use a tool? No
{ai_prefix}: [your response here]
```
"""

QUESTION = "Do I need to use a tool?"  # every reply's Thought asks it; Yes calls a tool, No answers
THOUGHT_YES, THOUGHT_NO = f"{QUESTION} Yes", f"{QUESTION} No"

SUFFIX = """Follow file name rules and do not fake non-existent file names. Remember to provide the image file name loyally from the last tool observation.

Previous conversation:
{chat_history}

New input: {input}
GPT4Tools needs to use tools to observe images, not directly imagine them. Thoughts and observations in the conversation are only visible to GPT4Tools. When answering human questions, repeat important information. Let's think step by step.
{agent_scratchpad}"""


@dataclass
class Turn:
    human: str
    ai: str


@dataclass
class ScratchStep:
    """One finished step as the model will read it back: its text, then the Observation."""
    text: str
    observation: str


class ToolLike(Protocol):
    """What the prompt reads of a tool (visual_tools.Tool has it)."""
    name: str
    description: str


IMAGE_TURN = "Provide an image named"


def image_turn(name: str, description: str | None) -> Turn:
    """GPT4Tools' history entry for an uploaded image."""
    about = f" The description is: {description}." if description else ""
    return Turn(f"{IMAGE_TURN} {name}.{about} Understand the image using tools.", "Received.")


def render_tools(tools: Sequence[ToolLike]) -> str:
    return "\n".join(f"> {tool.name}: {tool.description}" for tool in tools)


def render_history(history: Sequence[Turn]) -> str:
    return "".join(f"\n{HUMAN_PREFIX}: {t.human}\n{AI_PREFIX}: {t.ai}" for t in history)


def render_step(thought: str, tool: str, tool_input: str) -> str:
    """The canonical text of a tool-using step (what training data holds, too)."""
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {tool_input}"


def render_final(answer: str, thought: str = THOUGHT_NO) -> str:
    return f"Thought: {thought}\n{AI_PREFIX}: {answer}"


def render_scratchpad(steps: Sequence[ScratchStep]) -> str:
    return "".join(f"{s.text}\nObservation: {s.observation}\n" for s in steps)


def render_prompt(tools: Sequence[ToolLike], history: Sequence[Turn], user_input: str,
                  steps: Sequence[ScratchStep] = ()) -> str:
    """The full prompt; the model continues it with `Thought: ...`."""
    instructions = FORMAT_INSTRUCTIONS.format(tool_names=", ".join(t.name for t in tools), ai_prefix=AI_PREFIX)
    suffix = SUFFIX.format(chat_history=render_history(history), input=user_input,
                           agent_scratchpad=render_scratchpad(steps))
    return "\n\n".join([PREFIX, render_tools(tools), instructions, suffix])
