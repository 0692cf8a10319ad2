"""The Evaluate tab: GPT4Tools success rates of a controller (and adapter) on a case file, seen and unseen tools."""
from __future__ import annotations

import tempfile
from dataclasses import asdict
from pathlib import Path

import gradio as gr
import pandas as pd

from agent.controller import ControllerError
from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from agent.shortlist import load_shortlist, retriever_folder
from visual_tools import ToolRegistry
from visual_tools.zerogpu import on_gpu

from ..evaluation.evaluate import METRICS, evaluate, load_cases, markdown, shortlisted, summary, write_report
from .runs import ROOT, datasets_choices

PREDICTION_COLUMNS = ["id", "tools", "unseen", *METRICS]
SHIPPED_CASES = ROOT / "assets" / "eval"


def case_choices() -> list[str]:
    """The case files shipped in assets/eval, then every dataset in the data folder."""
    return [*map(str, sorted(SHIPPED_CASES.glob("*.jsonl"))),
            *(c for c in datasets_choices() if not c.startswith("review:"))]


def build_evaluate_tab(controllers: ControllerPool, registry: ToolRegistry | None = None) -> None:
    """Build the Evaluate tab inside the current gr.Blocks (it wires itself: nothing to return). `registry`: the
    app's tools, which the conversations run (every tool, on its default device, when None)."""
    with gr.Row():
        with gr.Column(scale=2):
            data = gr.Dropdown(case_choices(), value=None, allow_custom_value=True,
                               label="Cases (GPT4Tools JSON, records JSONL or a plain case JSONL)")
            upload = gr.File(label="…or upload one", file_types=[".json", ".jsonl"])
            controller = gr.Textbox("embedded", label="Controller ('embedded', a model id/folder or a URL)")
            adapter = gr.Textbox(label="LoRA adapter folder (optional)")
            unseen = gr.Textbox(label="Tools held out of training (prompt names, ';'-separated)")
            with gr.Row():
                limit = gr.Number(20, label="Cases (0: all)", precision=0, minimum=0)
                strict = gr.Checkbox(False, label="Image arguments must come from the gold image")
            with gr.Row():
                grammar = gr.Checkbox(True, label="Grammar-constrained replies (as the Chat decodes)")
                shortlist = gr.Number(0, label="Shortlist K (0: each case's own tools)", precision=0, minimum=0)
            run = gr.Button("Evaluate", variant="primary")
        with gr.Column(scale=3):
            table = gr.Markdown()
            # no value until a run: an empty frame's colour legend read "NaN"
            chart = gr.BarPlot(None, x="metric", y="value", color="set", title="Success rates (%)",
                               y_lim=[0, 100], height=280, elem_id="eval-chart")
            predictions = gr.Dataframe(headers=PREDICTION_COLUMNS, interactive=False, max_height=300)
            files = gr.File(label="summary.csv, summary.md, predictions.jsonl", file_count="multiple",
                            interactive=False)

    def on_run(data_, upload_, controller_, adapter_, unseen_, limit_, strict_, grammar_, shortlist_,
               progress=gr.Progress(track_tqdm=True)):
        source = upload_ or (data_ or "").strip()
        if not source:
            raise gr.Error("Choose or upload a case file.")
        all_tools = ToolRegistry.from_load().tools  # a case may offer tools this app did not load
        try:
            cases, problems = load_cases(source, all_tools)
        except (FileNotFoundError, ValueError) as exc:
            raise gr.Error(str(exc)) from None
        cases = cases[:int(limit_)] if limit_ else cases
        if not cases:
            raise gr.Error(f"No cases in {Path(source).name}" + (f": {problems[0]}" if problems else ""))
        try:
            spec = ControllerSpec.parse(controller_ or "embedded", adapter_)
            model = controllers.get(spec)
        except ControllerError as exc:
            raise gr.Error(str(exc)) from None
        held_out = [n.strip() for n in (unseen_ or "").split(";") if n.strip()]
        chosen, note = load_shortlist(int(shortlist_ or 0), retriever_folder((adapter_ or "").strip() or None),
                                      list(all_tools.values()))
        cases = shortlisted(cases, chosen) if chosen else cases
        results = evaluate(model, cases, all_tools, unseen=held_out, strict_images=strict_, grammar=bool(grammar_),
                           template=spec.template)
        rows = summary(results)
        out = write_report(results, Path(tempfile.mkdtemp(prefix="toolsmith-eval-")))
        chart_rows = [{"set": r["set"], "metric": m, "value": r[m]} for r in rows
                      if r["set"] in ("overall", "seen tools", "unseen tools") for m in METRICS]
        notes = "".join(f"\n- {p}" for p in [*problems[:10], *([note] if note else [])])
        text = f"**{model.name}** ({spec.template} prompt) on `{Path(source).name}`\n\n{markdown(rows)}" + notes
        table_rows = [[asdict(p)[c] for c in PREDICTION_COLUMNS] for p in results]
        return text, pd.DataFrame(chart_rows), table_rows, [str(p) for p in out.values()]

    data.focus(lambda: gr.update(choices=case_choices()), None, data)  # datasets made since the page opened
    run.click(on_gpu(on_run, duration=600),
              [data, upload, controller, adapter, unseen, limit, strict, grammar, shortlist],
              [table, chart, predictions, files],
              api_name="evaluate", concurrency_id="controller")
    with gr.Accordion("Conversations: success per turn, repeated answers, missing tools", open=False,
                      elem_id="eval-conversations"):
        build_conversation_eval(controllers, registry)
    with gr.Accordion("BFCL: function-calling AST accuracy, with and without self-refinement", open=False):
        build_bfcl_eval(controllers)
    with gr.Accordion("Toolformer: math word problems with and without calls", open=False):
        build_toolformer_eval()


def build_conversation_eval(controllers: ControllerPool, registry: ToolRegistry | None) -> None:
    """The multi-turn set through the session and agent the Chat runs (shortlist and grammar on) on the app's own
    tools, scored per turn."""
    from agent.history import HISTORY_TURNS
    from agent.loop import Agent
    from agent.shortlist import DEFAULT_K

    from ..evaluation.conversations import CONVERSATIONS, evaluate_conversations, load_conversations
    from ..evaluation.conversations import summary as turn_summary
    with gr.Row():
        with gr.Column(scale=2):
            data = gr.Textbox(str(CONVERSATIONS.relative_to(ROOT)), label="Conversations (JSONL)")
            controller = gr.Textbox("embedded", label="Controller ('embedded', a model id/folder or a URL)")
            adapter = gr.Textbox(label="LoRA adapter folder (optional)")
            with gr.Row():
                limit = gr.Number(5, label="Conversations (0: all)", precision=0, minimum=0)
                window = gr.Number(HISTORY_TURNS, label="History turns in the prompt", precision=0, minimum=0)
            go = gr.Button("Evaluate conversations", variant="primary")
        with gr.Column(scale=3):
            result = gr.Markdown()

    def on_run(data_, controller_, adapter_, limit_, window_, progress=gr.Progress()):
        try:
            path = Path(data_.strip())
            conversations = load_conversations(path if path.is_absolute() else ROOT / path)[:int(limit_) or None]
            spec = ControllerSpec.parse(controller_ or "embedded", adapter_)
            model = controllers.get(spec)
        except (OSError, ValueError, ControllerError) as exc:
            raise gr.Error(str(exc)) from None
        tools = registry or ToolRegistry.from_load()
        chosen, note = load_shortlist(DEFAULT_K, retriever_folder(spec.adapter), tools.all())
        results = evaluate_conversations(progress.tqdm(conversations, desc="conversations"), lambda: Agent(
            model, tools, history_turns=int(window_), shortlist=chosen, template=spec.template), tools)
        return f"**{model.name}** on {len(conversations)} conversations\n\n{turn_summary(results)}" + (
            f"\n\n{note}" if note else "")

    go.click(on_gpu(on_run, duration=600), [data, controller, adapter, limit, window], result,
             api_name="conversations_evaluate", concurrency_id="controller")


def build_bfcl_eval(controllers: ControllerPool) -> None:
    """BFCL questions bundled with bfcl-eval, scored by its own AST checker, for each refine mode chosen."""
    from ..toolace_r import bfcl
    from ..toolace_r.refine import REFINE_MODES, ROUNDS, SelfRefine
    with gr.Row():
        with gr.Column(scale=2):
            controller = gr.Textbox("embedded", label="Controller ('embedded', a model id/folder or a URL)")
            adapter = gr.Textbox(label="LoRA adapter folder (optional, e.g. a ToolACE-R run's best adapter)")
            categories = gr.CheckboxGroup(list(bfcl.CATEGORIES), value=["simple_python"], label="Categories")
            with gr.Row():
                limit = gr.Number(20, label="Questions per category (0: all)", precision=0, minimum=0)
                modes = gr.CheckboxGroup(list(REFINE_MODES), value=["none", "adaptive"], label="Self-refine")
                rounds = gr.Number(ROUNDS, label="Most refine rounds", precision=0, minimum=1)
            go = gr.Button("Evaluate on BFCL", variant="primary")
        with gr.Column(scale=3):
            result = gr.Markdown()

    def on_run(controller_, adapter_, categories_, limit_, modes_, rounds_, progress=gr.Progress()):
        if not categories_ or not modes_:
            raise gr.Error("choose at least one category and one refine mode")
        try:
            cases = [c for category in categories_ for c in bfcl.load_category(category, int(limit_))]
            model = controllers.get(ControllerSpec.parse(controller_ or "embedded", adapter_))
        except (ValueError, ControllerError, bfcl.BFCLUnavailable) as exc:
            raise gr.Error(str(exc)) from None
        rows = []
        for mode in modes_:
            refiner = SelfRefine(model, mode, int(rounds_), style="python")
            outcomes = bfcl.evaluate(lambda prompt: refiner.answer(prompt, max_new_tokens=128), cases,
                                     on_case=lambda done, total: progress(done / total, desc=f"refine {mode}"))
            rows += [{"setting": f"refine {mode}", **row} for row in bfcl.summary(outcomes)]
        return f"**{model.name}**\n\n{bfcl.markdown(rows)}"

    go.click(on_gpu(on_run, duration=600),
              [controller, adapter, categories, limit, modes, rounds], result, api_name="bfcl_evaluate",
             concurrency_id="controller")


def build_toolformer_eval() -> None:
    """SVAMP-style math (first number of the answer) for each call-trigger k, and perplexity with calls disabled.

    The model loads as `python -m training toolformer evaluate` loads it: raw text, no GPT4Tools adapter.
    """
    from ..toolformer.corpus import SVAMP
    from .toolformer_tab import WIKI
    with gr.Row():
        with gr.Column(scale=2):
            model = gr.Textbox("embedded", label="Model ('embedded', a hub id or a folder)")
            adapter = gr.Textbox(label="Toolformer adapter folder (optional)")
            math_file = gr.Textbox(str(SVAMP), label="Math problems (SVAMP-style JSON or JSONL of {question, answer})")
            with gr.Row():
                ks = gr.Textbox("0,1,3,10", label="Top-k values (0: calls disabled)")
                limit = gr.Number(20, label="Problems", precision=0, minimum=1)
                ppl = gr.Checkbox(True, label="Perplexity on held-out text")
            go = gr.Button("Evaluate with calls", variant="primary")
        with gr.Column(scale=3):
            result = gr.Markdown()
    loaded: dict = {}  # (model, adapter) -> the last model loaded, kept for the next evaluation

    def on_run(model_, adapter_, math_, ks_, limit_, ppl_, progress=gr.Progress()):
        from visual_tools.text_tools import read_texts

        from ..toolformer.evaluate import load_math, math_eval, perplexity
        from ..toolformer.evaluate import markdown as math_markdown
        from ..toolformer.lm import load_lm
        try:
            k_values = [int(k) for k in (ks_ or "0").split(",") if k.strip()]
            problems = load_math(math_.strip(), int(limit_))
        except (ValueError, OSError, KeyError) as exc:
            raise gr.Error(f"cannot read the problems or the k values: {exc}") from None
        if not problems:
            raise gr.Error("no problems in the file")
        key = ((model_ or "embedded").strip(), (adapter_ or "").strip() or None)
        try:
            if key not in loaded:
                loaded.clear()  # one model at a time
                loaded[key] = load_lm(*key)
            lm = loaded[key]
        except (ControllerError, ValueError) as exc:
            raise gr.Error(str(exc)) from None
        tools = {t.name: t for t in ToolRegistry.from_load("Calculator_cpu,Calendar_cpu").all()}
        rows, _ = math_eval(lm.model, lm.tokenizer, tools, problems, k_values,
                            on_progress=lambda done, total: progress(done / total, desc="decoding"))
        text = f"**{lm.name}** on {len(problems)} problems of `{Path(math_).name}`\n\n{math_markdown(rows)}"
        if ppl_:
            text += f"\n\nPerplexity on `{Path(WIKI).name}` (calls disabled): " \
                    f"{perplexity(lm.model, lm.tokenizer, read_texts(WIKI)):.3f}"
        return text

    go.click(on_gpu(on_run, duration=600),
              [model, adapter, math_file, ks, limit, ppl], result, api_name="toolformer_evaluate",
             concurrency_id="controller")
