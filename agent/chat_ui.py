"""The Chat tab: multimodal input, every Thought / Action / Observation as a collapsible message."""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from visual_tools import TEXT_TOOL_CLASSES, ImageInputError, ImageStore, ToolRegistry
from visual_tools.zerogpu import on_gpu

from .controller import Capability, ControllerError
from .events import (AnswerEvent, DraftEvent, ErrorEvent, Event, MissingToolEvent, ObservationEvent, OfferEvent,
                     RetryEvent, ThoughtEvent, ToolCallEvent)
from .factory import ControllerSpec, engines_for
from .loop import Agent
from .pool import ControllerPool
from .prompts import Turn
from .session import ChatSession
from .shortlist import DEFAULT_K, Shortlist, load_shortlist, retriever_folder

BACKENDS = [("Embedded (SmolLM2-135M, offline)", "embedded"),
            ("transformers: hub id or local folder", "transformers"),
            ("OpenAI-compatible URL (…/v1, optional #model)", "openai")]  # the values: ControllerSpec's kinds
EMBEDDED_ENGINES = ["auto", *engines_for("embedded")]
ASSETS = Path(__file__).resolve().parent.parent / "assets"
EXAMPLES = [("Detect the edges of this image.", "chelsea.png"),
            ("Find the faces in this photo.", "grace_hopper.jpg"),
            ("Detect the straight lines of this image.", "astronaut.png")]
UNTUNED = ("⚠️ This controller is untuned: it does not follow the tool format reliably until a LoRA "
           "adapter is trained for it (see the README).")


def describe(name: str, template: str) -> str:
    return f"✅ Using **{name}** · {template} prompt" + (f"\n\n{UNTUNED}" if "untuned" in name else "")


def controls(spec: ControllerSpec) -> tuple[str, str, str, str]:
    """What the controller picker (backend, location, adapter, engine) shows for `spec`."""
    return spec.kind, spec.location, spec.adapter or "", spec.engine if spec.kind == "embedded" else "auto"


DRAFT_INTERVAL = 0.1  # seconds between two redraws of a step being written
MAX_MESSAGE_CHARS = 4000  # a longer message would not fit the controller's context with the tool list
MODES = [("GPT4Tools agent (visual tools)", "agent"), ("Toolformer (text tools, calls in the top-k)", "toolformer")]


@dataclass
class ChatServices:
    """What the Chat tab shares across sessions. `toolformer(controller, question, tools)` answers a text question
    with Toolformer's call decoding (it needs `Capability.WEIGHTS`); `refine(controller)` wraps a controller in
    ToolACE-R's adaptive self-refinement, whose `rounds_log` lists each step's rounds (both given by the app: they
    live in the training package); None hides the switch. `tool_timeout`: seconds a tool call may take before the
    agent goes on without it. `demo` (a shared Space): the default controller only."""
    registry: ToolRegistry
    controllers: ControllerPool
    max_steps: int = 5
    tool_timeout: float | None = None
    demo: bool = False
    toolformer: Callable[..., Any] | None = None
    refine: Callable[[Any], Any] | None = None
    shortlist_k: int = DEFAULT_K
    grammar: bool = True

    def shortlist(self, adapter: str | None) -> tuple[Shortlist | None, str]:
        """The shortlist for a controller with `adapter` (its own classifier, else the shipped one), and a note
        where the classifier was refused."""
        return _shortlist(self.shortlist_k, retriever_folder(adapter), tuple(self.registry.all()))

    def warm_up(self) -> None:
        """Load the default controller's shortlist and its sentence encoder now (~5 s on a CPU), so that the first
        message does not wait for them; the app runs it in a thread at launch."""
        shortlist, _ = self.shortlist(self.controllers.default.adapter)
        if shortlist:
            shortlist.rank("warm-up", ())


@functools.lru_cache(maxsize=8)
def _shortlist(k: int, folder: Path, tools: tuple) -> tuple[Shortlist | None, str]:
    return load_shortlist(k, folder, tools)


@dataclass
class ChatState:
    """Per browser session (kept in gr.State): the conversation and what the Chatbot shows."""
    session: ChatSession = field(default_factory=ChatSession)
    messages: list[gr.ChatMessage] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)  # message count before each history turn
    pending: str = ""
    controller: ControllerSpec | None = None  # None: the app's default
    mode: str = "agent"
    refine: bool = False
    grammar: bool = True


def _image_message(store: ImageStore, name: str, role: str = "assistant") -> gr.ChatMessage:
    return gr.ChatMessage(role=role, content={"path": str(store.resolve(name)), "alt_text": name})


def _drop_draft(messages: list[gr.ChatMessage], step: int) -> None:
    if messages and messages[-1].metadata.get("id") == f"draft-{step}":
        messages.pop()


def render_event(messages: list[gr.ChatMessage], event: Event, store: ImageStore) -> None:
    """Apply one agent event to the Chatbot's messages (a pure function of its inputs)."""
    if isinstance(event, OfferEvent):
        grammar = "replies constrained by the grammar of these tools" if event.grammar else "replies unconstrained"
        grammar = "no tool is likely: a direct answer" if event.direct else grammar
        messages.append(gr.ChatMessage(content=", ".join(event.tools) or "(none)", metadata={
            "title": f"🧰 {len(event.tools)} of {event.available} tools offered; {grammar}", "status": "done"}))
    elif isinstance(event, DraftEvent):
        _drop_draft(messages, event.step)
        messages.append(gr.ChatMessage(content=event.text or "…", metadata={
            "title": f"🤔 Step {event.step + 1}: thinking…", "status": "pending", "id": f"draft-{event.step}"}))
    elif isinstance(event, ThoughtEvent):
        _drop_draft(messages, event.step)
        if event.text:
            messages.append(gr.ChatMessage(content=event.text, metadata={
                "title": f"💭 Step {event.step + 1}: thought", "status": "done"}))
    elif isinstance(event, ToolCallEvent):
        messages.append(gr.ChatMessage(content=f"**Action Input:** `{event.tool_input}`", metadata={
            "title": f"🛠️ {event.tool}", "status": "pending", "id": f"tool-{event.step}"}))
    elif isinstance(event, ObservationEvent):
        _drop_draft(messages, event.step)
        text = f"**Observation:** {event.text}"
        last = messages[-1] if messages else None
        if event.tool is not None and last is not None and last.metadata.get("id") == f"tool-{event.step}":
            last.content = f"{last.content}\n\n{text}"
            last.metadata.update(status="done", duration=round(event.duration, 2),
                                 title=("⚠️ " if event.error else "🛠️ ") + event.tool)
        else:
            messages.append(gr.ChatMessage(content=text, metadata={
                "title": f"⚠️ Step {event.step + 1}: format error", "status": "done"}))
        if event.image:
            messages.append(_image_message(store, event.image))
    elif isinstance(event, RetryEvent):
        _drop_draft(messages, event.step)
        messages.append(gr.ChatMessage(content=event.copied, metadata={
            "title": "↩️ that answer repeated an earlier one: asked again without the history", "status": "done"}))
    elif isinstance(event, MissingToolEvent):
        messages.append(gr.ChatMessage(content=event.reason, metadata={
            "title": f"🧩 needs {event.tool}: not loaded here", "status": "done"}))
    elif isinstance(event, AnswerEvent):
        messages.append(gr.ChatMessage(content=event.text))
        shown = {m.content.get("alt_text") for m in messages if isinstance(m.content, dict)}
        messages.extend(_image_message(store, n) for n in event.images if n not in shown)
    elif isinstance(event, ErrorEvent):
        messages.append(gr.ChatMessage(content=f"⚠️ {event.message}"))


@dataclass(frozen=True)
class ChatTab:
    """What app.py wires: the controller picker, and its Load as (function, inputs, outputs) for "Load this
    adapter in the Chat tab"."""

    backend: gr.Radio
    location: gr.Textbox
    adapter: gr.Textbox
    engine: gr.Radio
    load: tuple[Callable[..., Any], list[gr.components.Component], list[gr.components.Component]]


def build_chat_tab(services: ChatServices) -> ChatTab:
    """Build the Chat tab inside the current gr.Blocks."""
    state = gr.State(None, delete_callback=lambda s: s and s.session.store.delete())
    with gr.Row():
        with gr.Column(scale=4):
            chatbot = gr.Chatbot(label="Toolsmith", height=620, buttons=["copy_all"],
                                 placeholder="Upload a photo and ask about it, e.g. *detect the edges of this image*.")
            box = gr.MultimodalTextbox(file_types=["image"], sources=["upload"], show_label=False, elem_id="chat-input",
                                       placeholder="Type a message, or attach an image…")
            gr.Examples([{"text": text, "files": [str(ASSETS / name)]} for text, name in EXAMPLES], inputs=box)
            with gr.Row():
                undo = gr.Button("↩️ Undo last turn", size="sm")
                clear = gr.Button("🗑️ Clear", size="sm")
        with gr.Column(scale=1):
            picker = not services.demo
            kind, where, lora, run_on = controls(services.controllers.default)
            backend = gr.Radio(BACKENDS, value=kind, label="Controller", visible=picker)
            location = gr.Textbox(where, label="Model id, folder or URL", placeholder="lmsys/vicuna-13b-v1.5",
                                  visible=picker)
            adapter = gr.Textbox(lora, label="LoRA adapter folder (optional)", visible=picker)
            engine = gr.Radio(EMBEDDED_ENGINES, value=run_on, label="Engine", visible=picker and kind == "embedded",
                              info="auto: llama.cpp where it is installed; transformers scores tokens (Toolformer)")
            load = gr.Button("Load controller", visible=picker)
            status = gr.Markdown(describe(services.controllers.get().name, services.controllers.default.template))
            mode = gr.Radio(MODES, value="agent", label="Mode", visible=services.toolformer is not None,
                            info="Toolformer: a text question, answered with Calculator / Calendar / WikiSearch / "
                                 "QA / MT calls when `[` is among the 10 likeliest tokens (load a Toolformer adapter "
                                 "from the Train tab for it to call)")
            grammar = gr.Checkbox(services.grammar, label="Grammar-constrained replies",
                                  info="each step can only name an offered tool, with arguments that fit it and images "
                                       "that exist in this chat")
            refine = gr.Checkbox(False, label="Adaptive self-refine (ToolACE-R)", visible=services.refine is not None,
                                 info="each step is answered, then refined until two answers call the same tool "
                                      "with the same inputs (at most 5 rounds)")
            offered = (f"the likeliest for each message (at most {services.shortlist_k}), of: "
                       if services.shortlist_k else "")
            names = ", ".join(t.name for t in services.registry.available())
            gr.Markdown(f"**Tools offered:** {offered}{names}")

    def add_message(value: dict | None, st: ChatState | None):
        st = st or ChatState(grammar=services.grammar)
        if st.messages and not st.session.store.root.is_dir():  # swept while idle (--session-max-age / -mb)
            st = ChatState(controller=st.controller, mode=st.mode, refine=st.refine, grammar=st.grammar)
            st.messages.append(gr.ChatMessage(content="⚠️ This conversation's images were cleaned up while it was "
                                                      "idle, so it starts afresh: upload your image again."))
        value = value or {}
        text, files = (value.get("text") or "").strip(), value.get("files") or []
        text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates (not UTF-8) become '?'
        if not text and not files:
            gr.Warning("Type a message or attach an image.")
            return st.messages, gr.MultimodalTextbox(value=None, interactive=True), st
        if len(text) > MAX_MESSAGE_CHARS:
            note = f"Message not sent: {len(text):,} characters (the limit is {MAX_MESSAGE_CHARS:,}). Shorten it."
            gr.Warning(note)
            st.messages.append(gr.ChatMessage(content=f"⚠️ {note}", metadata={"title": "⚠️ too long",
                                                                               "status": "done"}))
            return st.messages, gr.MultimodalTextbox(value=value, interactive=True), st
        for file in files:
            path = file if isinstance(file, str) else file.get("path")
            try:
                name = st.session.add_image(path, services.registry)
            except ImageInputError as exc:
                gr.Warning(f"Upload refused: {exc}")
                st.messages.append(gr.ChatMessage(content=f"⚠️ Upload refused: {exc}"))
                continue
            st.marks.append(len(st.messages))
            st.messages += [_image_message(st.session.store, name, role="user"),
                            gr.ChatMessage(content=f"Received `{name}`.")]
        st.pending = text
        if text:
            st.marks.append(len(st.messages))
            st.messages.append(gr.ChatMessage(role="user", content=text))
        return st.messages, gr.MultimodalTextbox(value=None, interactive=False), st

    def respond(st: ChatState | None) -> Iterator[tuple[list, ChatState]]:
        if st is None or not st.pending:
            yield (st.messages if st else []), st
            return
        text, st.pending = st.pending, ""
        toolformer = st.mode == "toolformer" and services.toolformer is not None
        try:
            controller = services.controllers.get(st.controller)
            able = services.controllers.get(st.controller, need=Capability.WEIGHTS) if toolformer else controller
        except ControllerError as exc:
            st.session.history.append(Turn(text, f"Controller error: {exc}"))
            st.messages.append(gr.ChatMessage(content=f"⚠️ Controller error: {exc}"))
            yield st.messages, st
            return
        if toolformer:
            if able is not controller:
                st.messages.append(gr.ChatMessage(
                    content=f"{controller.name} keeps no transformers model to decode with calls: {able.name} answers",
                    metadata={"title": "ℹ️ engine", "status": "done"}))
            yield from toolformer_turn(able, text, st)
            return
        refiner = services.refine(controller) if st.refine and services.refine is not None else None
        controller = refiner or controller
        spec = st.controller or services.controllers.default
        shortlist, note = services.shortlist(spec.adapter)
        if note:
            st.messages.append(gr.ChatMessage(content=note, metadata={"title": "⚠️ shortlist", "status": "done"}))
        agent = Agent(controller, services.registry, max_steps=services.max_steps, tool_timeout=services.tool_timeout,
                      shortlist=shortlist, grammar=st.grammar, template=spec.template)
        shown = 0.0
        for event in st.session.send(agent, text):
            render_event(st.messages, event, st.session.store)
            if isinstance(event, DraftEvent) and time.monotonic() - shown < DRAFT_INTERVAL:
                continue  # every yield sends the whole conversation: a fast model's drafts are batched
            shown = time.monotonic()
            yield st.messages, st
        if st.grammar and Capability.GRAMMAR not in controller.capabilities:
            st.messages.append(gr.ChatMessage(content=f"{controller.name} does not take a grammar: its replies are "
                                                      "unconstrained (the parser still reads them).",
                                              metadata={"title": "⚠️ grammar", "status": "done"}))
        if refiner is not None and refiner.rounds_log:
            st.messages.append(gr.ChatMessage(
                content="refine rounds per step: " + ", ".join(map(str, refiner.rounds_log)),
                metadata={"title": "🔁 self-refine", "status": "done"}))
            yield st.messages, st

    def toolformer_turn(controller, text: str, st: ChatState) -> Iterator[tuple[list, ChatState]]:
        tools = {t.name: t for t in services.registry.available() if type(t).__name__ in TEXT_TOOL_CLASSES}
        st.messages.append(gr.ChatMessage(content="…", metadata={"title": "🤔 decoding with calls…",
                                                                   "status": "pending"}))
        yield st.messages, st
        st.messages.pop()
        try:
            out = services.toolformer(controller, text, tools)
        except (ValueError, ControllerError) as exc:
            st.messages.append(gr.ChatMessage(content=f"⚠️ {exc}"))
            st.session.history.append(Turn(text, f"Error: {exc}"))
            yield st.messages, st
            return
        for call in out.calls:
            st.messages.append(gr.ChatMessage(content=f"`{call.tool}({call.args})` → {call.result}", metadata={
                "title": ("⚠️ " if call.failed else "🛠️ ") + call.tool, "status": "done"}))
        for note in out.notes:
            st.messages.append(gr.ChatMessage(content=note, metadata={"title": "⚠️ call dropped", "status": "done"}))
        reply = out.text.strip() or "(no answer)"
        st.messages.append(gr.ChatMessage(content=reply))
        st.session.history.append(Turn(text, reply))
        yield st.messages, st

    def set_mode(value: str, st: ChatState | None):
        st = st or ChatState(grammar=services.grammar)
        st.mode = value if value in {v for _, v in MODES} else "agent"
        return st

    def set_grammar(value: bool, st: ChatState | None):
        st = st or ChatState(grammar=services.grammar)
        st.grammar = bool(value)
        return st

    def set_refine(value: bool, st: ChatState | None):
        st = st or ChatState(grammar=services.grammar)
        st.refine = bool(value)
        return st

    def undo_turn(st: ChatState | None):
        if st and st.marks:
            del st.messages[st.marks.pop():]
            st.session.undo()
        return (st.messages if st else []), st

    def clear_all(st: ChatState | None):
        if st:
            st.session.store.delete()
        fresh = ChatState(controller=st.controller if st else None, grammar=st.grammar if st else services.grammar)
        return fresh.messages, fresh

    def load_controller(kind: str, where: str, lora: str, run_on: str | None, st: ChatState | None,
                        progress=gr.Progress()):
        """The picker's choice, made into a ControllerSpec (the engine counts for the embedded kind only)."""
        st = st or ChatState(grammar=services.grammar)
        if services.demo:
            return "⚠️ This shared demo runs its own controller only; run Toolsmith locally to load another.", st
        progress(0, desc="Loading controller…")
        try:
            spec = ControllerSpec(kind, where or "", lora, run_on if kind == "embedded" else None)
            controller = services.controllers.get(spec)
        except ControllerError as exc:
            return f"⚠️ {exc}", st
        st.controller = spec
        return describe(controller.name, spec.template), st

    box.submit(add_message, [box, state], [chatbot, box, state], api_name="add_message", queue=False).then(
        on_gpu(respond), state, [chatbot, state], api_name="respond", concurrency_id="controller").then(
        lambda: gr.MultimodalTextbox(interactive=True), None, box, api_visibility="private")
    mode.change(set_mode, [mode, state], state, api_name="set_mode")
    refine.change(set_refine, [refine, state], state, api_name="set_refine")
    grammar.change(set_grammar, [grammar, state], state, api_name="set_grammar")
    undo.click(undo_turn, state, [chatbot, state], api_name="undo")
    clear.click(clear_all, state, [chatbot, state], api_name="clear")
    backend.change(lambda k: gr.Radio(visible=k == "embedded"), backend, engine, api_visibility="private")
    load.click(load_controller, [backend, location, adapter, engine, state], [status, state],
               api_name="load_controller", concurrency_id="controller")
    return ChatTab(backend, location, adapter, engine,
                   (load_controller, [backend, location, adapter, engine, state], [status, state]))
