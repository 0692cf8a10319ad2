"""The Thought/Action/Observation loop: every error becomes an Observation; only our bugs raise."""
from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator

from visual_tools import ImageStore, Tool, ToolInputError, ToolRegistry, ToolTimeout, invoke
from visual_tools.image_store import IMAGE_NAME

from .controller import Controller, ControllerError, PromptTooLong
from .events import (AnswerEvent, DraftEvent, ErrorEvent, Event, MissingToolEvent, ObservationEvent, OfferEvent,
                     RetryEvent, ThoughtEvent, ToolCallEvent)
from .grammar import Grammar, build_grammar
from .history import HISTORY_TURNS, plain, prompt_history, short_answer, uploads_only
from .parsing import Final, ParseError, parse_step, trim_repetition
from .prompts import DEFAULT_TEMPLATE, STOP, ScratchStep, Turn, render_prompt, render_step
from .shortlist import Shortlist

log = logging.getLogger(__name__)
STOPPED = "Agent stopped due to iteration limit."


class Agent:
    """Runs one user turn against a controller and a tool registry, yielding events as they happen."""

    """`shortlist`: offer each turn only the tools it ranks first (None: every available tool); `grammar`:
    decode each step under the grammar of the offered tools and the session's images; `template`: the prompt
    template the controller was trained with (`ControllerSpec.template`)."""

    def __init__(self, controller: Controller, registry: ToolRegistry, *, max_steps: int = 5,
                 max_new_tokens: int = 256, temperature: float = 0.0, history_turns: int = HISTORY_TURNS,
                 tool_timeout: float | None = None, shortlist: Shortlist | None = None, grammar: bool = True,
                 template: str = DEFAULT_TEMPLATE):
        self.controller, self.registry, self.template = controller, registry, template
        self.max_steps, self.max_new_tokens, self.temperature = max_steps, max_new_tokens, temperature
        self.history_turns, self.tool_timeout = history_turns, tool_timeout
        self.shortlist, self.grammar = shortlist, grammar

    def offered(self, user_input: str, history: list[Turn]) -> list[Tool]:
        """The tools this turn's prompt lists: fixed for the turn, so that its steps share the prompt's cache."""
        tools = self.registry.available()
        return self.shortlist.pick(user_input, history, tools) if self.shortlist else tools

    def _stream(self, step: int, tools: list[Tool], user_input: str, history: list[Turn], steps: list[ScratchStep],
                grammar: Grammar | None) -> Generator[DraftEvent, None, tuple[str, list[Turn]]]:
        """The step's text, its drafts yielded as they come; a prompt too long for the controller's context
        loses its oldest turns until it fits (PromptTooLong comes before any text). Returns the text and
        the history it was written with."""
        while True:
            text = ""
            try:
                prompt = render_prompt(tools, history, user_input, steps, self.template)
                for piece in self.controller.stream(prompt, stop=STOP, max_new_tokens=self.max_new_tokens,
                                                    temperature=self.temperature, grammar=grammar):
                    text += piece
                    yield DraftEvent(step, text)
                return text, history
            except PromptTooLong:
                if not history:
                    raise
                history = history[1:]

    def missing(self, user_input: str, available: list[str]) -> MissingToolEvent | None:
        """The turn's answer where the request needs a tool that is here but not available (no weights): what it
        needs and how to get it, instead of a guess from the tools that are."""
        name = self.shortlist.missing(user_input, available) if self.shortlist else None
        tool = self.registry.tools.get(name) if name else None  # the shortlist may know tools this app lacks
        if tool is None:
            return None
        reason = tool.availability()[1]
        text = (f"I can't do that here: it needs the tool {name}, which is not loaded on this machine: {reason}. "
                f"Then restart the app (--load {type(tool).__name__}_cuda:0 chooses its device).")
        return MissingToolEvent(name, reason, text)

    def run(self, user_input: str, history: list[Turn], store: ImageStore) -> Iterator[Event]:
        said = {plain(a) for t in history for a in (t.ai, short_answer(t.ai))}  # as given, and as the prompt shows it
        history = prompt_history(history, self.history_turns)
        tools = self.offered(user_input, history)
        available = [t.name for t in self.registry.available()]
        direct = self.grammar and self.shortlist is not None and self.shortlist.needs_none(user_input, available)
        yield OfferEvent([t.name for t in tools], len(available), self.grammar, direct)
        if (missing := self.missing(user_input, available)) is not None:
            yield missing
            yield AnswerEvent(missing.text)
            return
        steps: list[ScratchStep] = []
        done: tuple[Tool, str, str] | None = None  # the last successful call: its tool, input and Observation
        retried, step, limit = False, 0, self.max_steps
        while step < limit:
            grammar = build_grammar([] if direct else tools, store.names()) if self.grammar else None
            try:
                text, history = yield from self._stream(step, tools, user_input, history, steps, grammar)
            except ControllerError as exc:
                yield ErrorEvent(f"Controller error: {exc}")
                return
            parsed = parse_step(text)
            if isinstance(parsed, Final):
                answer = trim_repetition(parsed.answer)  # a looping reply keeps its first copy only
                if not retried and plain(answer) in said:
                    # an earlier answer copied out of the history: the turn once more, shown only the uploads
                    log.info("answer copied from the history (%r): the turn again without it", answer)
                    retried, history, steps, done = True, uploads_only(history), [], None
                    yield RetryEvent(step, answer)
                    step, limit = step + 1, step + 1 + self.max_steps  # the retry has a whole turn's steps
                    continue
                yield ThoughtEvent(step, parsed.thought)
                if done is not None and not done[0].found(answer, done[2]):
                    answer = done[0].report(done[2], done[1])  # say what the tool found, not what the model guessed
                names = [n for n in dict.fromkeys(IMAGE_NAME.findall(answer)) if _exists(store, n)]
                yield AnswerEvent(answer, names)
                return
            if isinstance(parsed, ParseError):
                yield ObservationEvent(step, None, parsed.message, error=True)
                steps.append(ScratchStep(parsed.text.strip(), parsed.message))
                step += 1
                continue
            yield ThoughtEvent(step, parsed.thought)
            yield ToolCallEvent(step, parsed.tool, parsed.tool_input)
            started, name, image, error = time.monotonic(), parsed.tool, None, True
            try:
                tool = self.registry.get(parsed.tool)
                name = tool.name
                result = invoke(tool, parsed.tool_input, store, self.tool_timeout)
                observation, image, error = result.text, result.image, False
                done = (tool, parsed.tool_input, observation)
            except (ToolInputError, ToolTimeout) as exc:
                observation = f"Error: {exc}"
            except Exception as exc:  # a tool's own failure (weights, CUDA, a bad file) is the model's news
                log.exception("tool %s failed", name)
                observation = f"Error: {name} failed: {type(exc).__name__}: {exc}"
            yield ObservationEvent(step, name, observation, image, time.monotonic() - started, error)
            steps.append(ScratchStep(render_step(parsed.thought, name, parsed.tool_input), observation))
            step += 1
        yield ErrorEvent(f"{STOPPED} ({self.max_steps} steps without a final answer)")


def _exists(store: ImageStore, name: str) -> bool:
    try:
        store.resolve(name)
        return True
    except ToolInputError:
        return False
