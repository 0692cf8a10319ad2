"""The one prompt renderer, shared by inference, dataset rendering and evaluation; two templates.

`gpt4tools`: GPT4Tools' wording (gpt4tools_demo.py), assembled as LangChain 0.0.101's conversational agent does
(prefix, tool list, format instructions and suffix joined by blank lines), the scratchpad inside the prompt: what
GPT4Tools' checkpoints, Vicuna and hub controllers read. `compact`: a short frame with one line per tool (name,
inputs, the tool's `purpose`) for the small embedded controller, whose scratchpad continues the model's own reply,
so that a conversation trains as one sequence and each step's prompt extends the last one. Both keep the same
reply lines, so the parser, the grammar and the metrics stay single. A template is a property of the adapter
(`toolsmith.json`'s "prompt", read through `ControllerSpec.template`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

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


class InputLike(Protocol):
    name: str
    optional: bool


class ToolLike(Protocol):
    """What the prompt reads of a tool (visual_tools.Tool has it)."""
    name: str
    description: str
    purpose: str
    inputs: Sequence[InputLike]


class Prompt(str):
    """A rendered prompt: the plain text an engine without a chat template reads, which also knows where the model's
    own reply begins. A chat template puts `head` in the user's turn and continues `reply` (the scratchpad so far)
    after the assistant's tag; for `gpt4tools` the scratchpad is part of the head and `reply` is empty."""
    head: str
    reply: str

    def __new__(cls, head: str, reply: str = "") -> Prompt:
        prompt = super().__new__(cls, head + reply)
        prompt.head, prompt.reply = head, reply
        return prompt


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


def _gpt4tools(tools: Sequence[ToolLike], history: Sequence[Turn], user_input: str,
               steps: Sequence[ScratchStep]) -> Prompt:
    instructions = FORMAT_INSTRUCTIONS.format(tool_names=", ".join(t.name for t in tools), ai_prefix=AI_PREFIX)
    suffix = SUFFIX.format(chat_history=render_history(history), input=user_input,
                           agent_scratchpad=render_scratchpad(steps))
    return Prompt("\n\n".join([PREFIX, render_tools(tools), instructions, suffix]))


COMPACT_INTRO = "Tools, likeliest first (images are seen only through them; copy file names exactly):"
COMPACT_FORMAT = f"Reply Thought: {QUESTION} Yes/No. Yes: Action: <tool>, Action Input: <inputs>. No: {AI_PREFIX}: <answer>."


def compact_tool_line(tool: ToolLike) -> str:
    inputs = ', '.join(i.name + ('?' if i.optional else '') for i in tool.inputs)
    return f"> {tool.name}({inputs}): {tool.purpose}"


def _compact(tools: Sequence[ToolLike], history: Sequence[Turn], user_input: str,
             steps: Sequence[ScratchStep]) -> Prompt:
    lines = [COMPACT_INTRO, *map(compact_tool_line, tools), COMPACT_FORMAT]
    lines += [line for t in history for line in (f"{HUMAN_PREFIX}: {t.human}", f"{AI_PREFIX}: {t.ai}")]
    return Prompt("\n".join([*lines, f"{HUMAN_PREFIX}: {user_input}"]) + "\n", render_scratchpad(steps))


TemplateName = Literal["gpt4tools", "compact"]
TEMPLATES: tuple[TemplateName, ...] = get_args(TemplateName)
DEFAULT_TEMPLATE: TemplateName = "gpt4tools"  # an adapter that records none, and every model without an adapter
_RENDERERS = {"gpt4tools": _gpt4tools, "compact": _compact}


def continues_reply(template: str) -> bool:
    """Whether the template's scratchpad continues the model's reply (a conversation then trains as one sequence)."""
    return template == "compact"


def render_prompt(tools: Sequence[ToolLike], history: Sequence[Turn], user_input: str,
                  steps: Sequence[ScratchStep] = (), template: str = DEFAULT_TEMPLATE) -> Prompt:
    """The full prompt for `template`; the model continues it with `Thought: ...`."""
    if template not in _RENDERERS:
        raise ValueError(f"unknown prompt template '{template}': one of {', '.join(TEMPLATES)}")
    return _RENDERERS[template](tools, history, user_input, steps)
