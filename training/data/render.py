"""Records <-> text: the prompt and trace through agent/prompts.py, and GPT4Tools' own JSON format."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from dataclasses import dataclass

from agent.history import prompt_history
from agent.parsing import Final, Step, parse_step
from agent.prompts import (AI_PREFIX, DEFAULT_TEMPLATE, STOP, Prompt, ScratchStep, ToolLike, Turn, continues_reply,
                           image_turn, render_final, render_prompt, render_step)

from .records import GoldStep, Record, Source, record_id

OBSERVATION = STOP[0]  # "\nObservation:", where the model stops and the tool's result is pasted in


@dataclass
class Segment:
    text: str
    trained: bool  # False for the given steps' text and every Observation: masked from the loss


def conversation(record: Record) -> list[Turn]:
    """The record's earlier turns as the chat's prompt holds them (`agent.history.prompt_history`)."""
    turns = [image_turn(record.image_name, record.caption or None)] if record.image_name else []
    return prompt_history(turns + [Turn(h, a) for h, a in record.history])


def step_text(step: GoldStep) -> str:
    return render_step(step.thought, step.tool, ", ".join(step.args))


def examples(record: Record, tools: Mapping[str, ToolLike],
             template: str = DEFAULT_TEMPLATE) -> list[tuple[Prompt, str]]:
    """GPT4Tools' step samples: per trained step, the prompt the agent loop renders before it and the step's text
    (a tool call ends with its "\nObservation:"; the final answer ends the turn)."""
    offered = [tools[name] for name in record.tools]
    done = [ScratchStep(step_text(s), s.observation) for s in record.steps[:record.given_steps]]
    pairs = []
    for step in record.steps[record.given_steps:]:
        pairs.append((render_prompt(offered, conversation(record), record.instruction, done, template),
                      step_text(step) + OBSERVATION))
        done = [*done, ScratchStep(step_text(step), step.observation)]
    if record.answer is not None:
        pairs.append((render_prompt(offered, conversation(record), record.instruction, done, template),
                      render_final(record.answer)))
    return pairs


def sequences(record: Record, tools: Mapping[str, ToolLike],
              template: str = DEFAULT_TEMPLATE) -> list[tuple[Prompt, list[Segment]]]:
    """What trains on a record: each a prompt, then the reply's pieces. Where the template's scratchpad continues
    the reply (`compact`), the record is one sequence: its first prompt, every step, each Observation (masked) and
    the answer, so one forward pass trains them all and step k reads what the loop feeds it at step k. For
    `gpt4tools` (the scratchpad inside the prompt) it is GPT4Tools' one sample per step."""
    pairs = examples(record, tools, template)
    if not pairs or not continues_reply(template):
        return [(prompt, [Segment(completion, True)]) for prompt, completion in pairs]
    pieces = []
    for (prompt, completion), (following, _) in zip(pairs, pairs[1:]):
        seen = prompt.reply + completion
        assert following.reply.startswith(seen), "a step's prompt must extend the one before it"
        pieces += [Segment(completion, True), Segment(following.reply[len(seen):], False)]
    return [(pairs[0][0], [*pieces, Segment(pairs[-1][1], True)])]


def render_trace(record: Record) -> str:
    """The gold steps and answer as the model writes them (what the Review tab shows and edits)."""
    text = "".join(f"{step_text(s)}\nObservation: {s.observation}\n" for s in record.steps)
    return text + (render_final(record.answer) if record.answer is not None else "")


def split_args(tool_input: str, tool: str, tools: Mapping[str, Any] | None = None) -> list[str]:
    """GPT4Tools' comma-separated Action Input as positional args; a known tool's last input keeps its commas."""
    inputs = getattr((tools or {}).get(tool), "inputs", None)
    return [a.strip() for a in tool_input.split(",", len(inputs) - 1 if inputs else -1)]


def parse_trace(text: str, tools: Mapping[str, Any] | None = None) -> tuple[list[GoldStep], str | None]:
    """Read back a trace written like `render_trace`; raises ValueError with what is wrong.

    With `tools` (name -> tool), arguments are split into exactly the tool's inputs."""
    steps: list[GoldStep] = []
    chunks = re.split(r"\n\s*Observation:[ \t]*", "\n" + text.strip())
    for i, chunk in enumerate(chunks):
        body = chunk.strip()
        if i > 0:  # this chunk starts with the previous step's observation, up to the next Thought
            observation, _, body = body.partition("\n")
            steps[-1].observation = observation.strip()
            body = body.strip()
        if not body:
            continue
        parsed = parse_step(body)
        if isinstance(parsed, Step):
            if i == len(chunks) - 1:
                raise ValueError(f"step {len(steps) + 1} ('{parsed.tool}') has no 'Observation:' line")
            steps.append(GoldStep(thought=parsed.thought, tool=parsed.tool,
                                  args=split_args(parsed.tool_input, parsed.tool, tools)))
        elif isinstance(parsed, Final):
            if i != len(chunks) - 1:
                raise ValueError("the final answer must come last")
            return steps, parsed.answer
        else:
            raise ValueError(f"step {len(steps) + 1}: {parsed.message}")
    return steps, None


# --- GPT4Tools' JSON: {"instruction": prompt + trace so far, "input": "", "output": next response} -------------
_TOOL_LINE = re.compile(r"^> (.+?): ", re.M)
_IMAGE_TURN = re.compile(r"Provide an image named (\S+)\.\s*(?:Description: |The description is: )?(.*?)\.?\s*"
                         r"Understand the image using tools\.", re.S)
_TURN = re.compile(rf"\nHuman: (.*?)\n{AI_PREFIX}: (.*?)(?=\nHuman: |\s*$)", re.S)


def from_gpt4tools(sample: Mapping[str, str], source: str = "gpt4tools",
                   tools: Mapping[str, Any] | None = None) -> Record:
    """One GPT4Tools sample as a record; raises ValueError when it is not in that format."""
    prompt, output = sample.get("instruction", ""), sample.get("output", "")
    head, sep, trace = prompt.partition("Let's think step by step.\n")
    if not sep or "New input:" not in head or "Previous conversation:" not in head:
        raise ValueError("not a GPT4Tools prompt (no 'Previous conversation:' / 'New input:' / "
                         "'Let's think step by step.')")
    offered = _TOOL_LINE.findall(head.split("To use a tool", 1)[0])
    history_text = head.split("Previous conversation:", 1)[1].split("New input:", 1)[0]
    instruction = head.split("New input:", 1)[1].split("\nGPT4Tools needs to use tools", 1)[0].strip()
    image_name, caption, history = None, "", []
    for human, ai in _TURN.findall("\n" + history_text.strip()):
        found = _IMAGE_TURN.fullmatch(human.strip())
        if found and image_name is None and not history:
            image_name, caption = found.group(1), found.group(2).strip()
        else:
            history.append((human.strip(), ai.strip()))
    given = parse_trace(trace, tools)[0] if trace.strip() else []
    following, answer = parse_trace(output, tools)
    kind = "context" if given else ("negative" if not following else "positive")
    return Record(id=record_id(source, prompt, output), image_name=image_name, caption=caption, tools=offered,
                  history=history, instruction=instruction, steps=given + following, answer=answer,
                  given_steps=len(given), kind=kind, source=Source(teacher=source, prompt_version="gpt4tools"))


def to_gpt4tools(record: Record, tools: Mapping[str, ToolLike]) -> list[dict[str, str]]:
    return [{"instruction": prompt, "input": "", "output": output} for prompt, output in examples(record, tools)]

