"""The Review tab: one generated record at a time; accept, edit-then-accept, reject with a reason, skip, undo."""
from __future__ import annotations

import html
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

from visual_tools import ToolRegistry

from ..data.filters import check
from ..data.records import Record
from ..data.render import parse_trace, render_trace
from ..data.review_store import Filters, Item, ReviewConflict, ReviewStore

ALL = "all"
# Keyboard shortcuts, installed once through launch(head=...): a/r/space/u/e outside text boxes,
# ctrl+s anywhere in the tab, Enter in the reason box rejects.
HOTKEYS = """<script>
document.addEventListener("keydown", (event) => {
  const tab = document.getElementById("review-accept");
  if (!tab || tab.offsetParent === null) return;  // the Review tab is not on screen
  const click = (id) => { event.preventDefault(); document.getElementById(id)?.click(); };
  if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") return click("review-edit");
  const target = event.target;
  if (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.isContentEditable) {
    if (event.key === "Escape") target.blur();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const keys = {"a": "review-accept", "r": "review-reject", " ": "review-skip", "u": "review-undo"};
  if (keys[event.key]) return click(keys[event.key]);
  if (event.key === "e") { event.preventDefault(); document.querySelector("#review-instruction textarea")?.focus(); }
});
</script>"""


def steps_markdown(record: Record) -> str:
    """The gold chain as a person reads it: numbered tool calls with arguments and results."""
    lines = []
    for i, step in enumerate(record.steps, 1):
        given = " *(given in the prompt)*" if i <= record.given_steps else ""
        args = ", ".join(f"`{a}`" for a in step.args)
        lines.append(f"{i}. **{step.tool}**({args}){given}  \n   → {html.escape(step.observation) or '…'}")
    text = "\n".join(lines) or "*(no tool: the model should answer directly)*"
    return text + (f"\n\n**Answer:** {html.escape(record.answer)}" if record.answer is not None else "")


def _open(path: str | None) -> Image.Image | None:
    """The record's image, read here (it may live in any folder the generator was given)."""
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (OSError, TypeError, AttributeError, ValueError):
        return None


@dataclass(frozen=True)
class ReviewTab:
    """What app.py wires: a refresh (on page load and when the tab opens) and the reviewer's name from the login.
    Each is (function, inputs, outputs)."""

    refresh: tuple[Callable[..., Any], list[gr.components.Component], list[gr.components.Component]]
    on_load: tuple[Callable[..., Any], None, list[gr.components.Component]]


def build_review_tab(store: ReviewStore, registry: ToolRegistry) -> ReviewTab:
    """Build the Review tab inside the current gr.Blocks."""
    current = gr.State(None)  # (record id, version) on screen
    with gr.Row():
        reviewer = gr.Textbox(label="Reviewer", placeholder="your name", scale=1)
        status = gr.Dropdown([ALL, "pending", "accepted", "rejected"], value="pending", label="Status", scale=1)
        tool = gr.Dropdown([ALL], value=ALL, label="Tool", scale=2)
        kind = gr.Dropdown([ALL], value=ALL, label="Kind", scale=1)
        teacher = gr.Dropdown([ALL], value=ALL, label="Source", scale=1)
        progress = gr.Markdown()
    with gr.Row():
        with gr.Column(scale=2):
            image = gr.Image(label="Image", interactive=False, height=320, elem_id="review-image")
            meta = gr.Markdown()
            history = gr.Markdown()
        with gr.Column(scale=3):
            instruction = gr.Textbox(label="Instruction  [e to edit]", lines=2, elem_id="review-instruction")
            steps = gr.Markdown(label="Gold steps")
            with gr.Accordion("Edit the steps (Thought / Action / Action Input / Observation, then AI:)", open=False):
                trace = gr.Textbox(show_label=False, lines=8, elem_id="review-trace")
            reason = gr.Textbox(label="Reason for rejecting  [Enter rejects]", elem_id="review-reason")
            with gr.Row():
                accept = gr.Button("✅ Accept  [a]", variant="primary", elem_id="review-accept")
                edit = gr.Button("✏️ Save edit & accept  [ctrl+s]", elem_id="review-edit")
                reject = gr.Button("❌ Reject  [r]", variant="stop", elem_id="review-reject")
                skip = gr.Button("⏭ Skip  [space]", elem_id="review-skip")
                undo = gr.Button("↩ Undo  [u]", elem_id="review-undo")
    with gr.Row():
        export_status = gr.Radio(["accepted", "all (with status)"], value="accepted", label="Export")
        export = gr.Button("Export JSONL", size="sm")
        exported = gr.File(label="Exported records", interactive=False)

    filters_in = [status, tool, kind, teacher]
    view_out = [current, image, meta, history, instruction, steps, trace, reason, progress]

    def filters(status_: str, tool_: str, kind_: str, teacher_: str) -> Filters:
        pick = lambda value: None if value in (ALL, None) else value  # noqa: E731
        return Filters(pick(status_), pick(tool_), pick(kind_), pick(teacher_))

    def view(item: Item | None) -> list:
        counts = store.counts()
        done = counts["accepted"] + counts["rejected"]
        progress_text = (f"**{done} / {counts['total']} reviewed** · ✅ {counts['accepted']} · "
                         f"❌ {counts['rejected']} · ⏳ {counts['pending']}")
        if item is None:
            return [None, None, "*No record matches these filters.*", "", "", "", "", "", progress_text]
        r = item.record
        about = (f"`{r.id}` · **{r.kind}** · from *{r.source.teacher}* · status **{r.status}**"
                 + (f" by {r.reviewer}" if r.reviewer else "") + (f" · reason: {r.reason}" if r.reason else "")
                 + (" · *edited (original kept)*" if r.original else "")
                 + f"\n\nImage name in the conversation: `{r.image_name}`" * bool(r.image_name))
        turns = "\n".join(f"- **Human:** {html.escape(h)}\n  **AI:** {html.escape(a)}" for h, a in r.history)
        picture = _open(r.image)
        return [(r.id, item.version), picture, about, turns and f"**Earlier in the conversation**\n{turns}",
                r.instruction, steps_markdown(r), render_trace(r), r.reason or "", progress_text]

    def name_of(typed: str, request: gr.Request | None) -> str:
        return (getattr(request, "username", None) or typed or "").strip()

    def refresh(*f) -> list:
        c = store.choices()
        return [gr.update(choices=[ALL, *c["tool"]]), gr.update(choices=[ALL, *c["kind"]]),
                gr.update(choices=[ALL, *c["teacher"]]), *view(store.next(filters(*f)))]

    def advance(shown: tuple | None, *f) -> list:
        return view(store.next(filters(*f), after=shown[0] if shown else None))

    def unchanged(message: str) -> list:
        """A toast alone: the record, its image and the panels stay as they are (no error badges)."""
        gr.Warning(message)
        return [gr.skip()] * len(view_out)

    def decide(action: str, shown: tuple | None, who: str, text: str, trace_text: str, why: str,
               f: tuple, request: gr.Request | None) -> list:
        if not shown:
            return unchanged("No record on screen.")
        record_id, version = shown
        edited = None
        if action == "edit":
            item = store.get(record_id)
            try:
                steps_, answer = parse_trace(trace_text, registry.tools)
            except ValueError as exc:
                return unchanged(f"The steps do not parse: {exc}")
            edited = item.record.model_copy(update={"instruction": text.strip(), "steps": steps_, "answer": answer,
                                                    "given_steps": min(item.record.given_steps, len(steps_))})
            problem = check(edited, registry) if text.strip() else "an empty instruction"
            if problem:
                return unchanged(f"Not saved: {problem} (check the tool names and their inputs).")
        try:
            store.decide(record_id, version, action, name_of(who, request), edited=edited, reason=why)
        except ReviewConflict as exc:
            gr.Warning(str(exc))
            return view(store.get(record_id))
        except ValueError as exc:  # no reviewer name, no reason for a rejection
            return unchanged(str(exc))
        return advance(shown, *f)

    def on_accept(shown, who, status_, tool_, kind_, teacher_, request: gr.Request):
        return decide("accept", shown, who, "", "", "", (status_, tool_, kind_, teacher_), request)

    def on_edit(shown, who, text, trace_text, status_, tool_, kind_, teacher_, request: gr.Request):
        return decide("edit", shown, who, text, trace_text, "", (status_, tool_, kind_, teacher_), request)

    def on_reject(shown, who, why, status_, tool_, kind_, teacher_, request: gr.Request):
        return decide("reject", shown, who, "", "", why, (status_, tool_, kind_, teacher_), request)

    def on_undo(who, request: gr.Request):
        try:
            return view(store.undo(name_of(who, request)))
        except (ValueError, ReviewConflict) as exc:
            return unchanged(str(exc))

    def on_export(which: str):
        out = Path(tempfile.mkdtemp(prefix="toolsmith-export-")) / "reviewed.jsonl"
        count = store.export(out, status="accepted" if which == "accepted" else None)
        gr.Info(f"Exported {count} records.")
        return str(out)

    def on_load(request: gr.Request):
        """With a login (`--auth`), the reviewer is the logged-in user."""
        user = getattr(request, "username", None)
        return gr.update(value=user, interactive=False) if user else gr.update()

    for dropdown in filters_in:
        dropdown.input(lambda *f: view(store.next(filters(*f))), filters_in, view_out)
    accept.click(on_accept, [current, reviewer, *filters_in], view_out, api_name="review_accept")
    edit.click(on_edit, [current, reviewer, instruction, trace, *filters_in], view_out, api_name="review_edit")
    reject.click(on_reject, [current, reviewer, reason, *filters_in], view_out, api_name="review_reject")
    reason.submit(on_reject, [current, reviewer, reason, *filters_in], view_out)
    skip.click(advance, [current, *filters_in], view_out, api_name="review_skip")
    undo.click(on_undo, [reviewer], view_out, api_name="review_undo")
    export.click(on_export, [export_status], exported, api_name="review_export")
    return ReviewTab(refresh=(refresh, filters_in, [tool, kind, teacher, *view_out]),
                     on_load=(on_load, None, [reviewer]))
