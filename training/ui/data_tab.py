"""The Data tab: generate instructions for images with a teacher, see the filter report, send them to review."""
from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import gradio as gr

from visual_tools import ToolRegistry, data_home

from ..data.generate import build_dataset
from ..data.records import load_jsonl
from ..data.render import from_gpt4tools
from ..data.review_store import ReviewStore
from ..data.teachers import load_teacher

ASSETS = Path(__file__).resolve().parents[2] / "assets"
PREVIEW_COLUMNS = ["kind", "instruction", "tools used", "answer"]


DEMO_MAX_RECORDS = 20  # a shared demo Space generates a taste of the data, not a dataset


def build_data_tab(store: ReviewStore, registry: ToolRegistry, demo: bool = False) -> None:
    """Build the Data tab inside the current gr.Blocks (it wires itself: nothing to return). `demo` (a shared Space):
    the template teacher only, the example images or uploads (no server folder), at most DEMO_MAX_RECORDS."""
    gr.Markdown("Generate GPT4Tools-style instructions: the teacher sees each image's caption and objects "
                "and the tool descriptions, and writes instructions with their tool calls. The **template** "
                "teacher works offline; an OpenAI-compatible URL (`http://host:8000/v1#model`) or a local model "
                "id uses an LLM. Results are filtered, augmented, written as JSONL and queued for review.")
    with gr.Row():
        with gr.Column():
            folder = gr.Textbox(str(ASSETS), label="Image folder on the server (with an optional annotations.json)",
                                interactive=not demo)
            uploads = gr.File(label="…or upload images", file_count="multiple", file_types=["image"])
            teacher = gr.Dropdown(["template"] if demo else ["template", "embedded"], value="template",
                                  allow_custom_value=not demo, label="Teacher (or type a URL / model id)")
            if demo:
                gr.Markdown(f"*Shared demo: the template teacher, at most {DEMO_MAX_RECORDS} instructions.*")
            with gr.Row():
                n = gr.Number(12 if demo else 60, label="Instructions (about)", precision=0, minimum=1,
                              maximum=DEMO_MAX_RECORDS if demo else 20000)
                per_call = gr.Number(20, label="Per teacher call", precision=0, minimum=1, maximum=100)
                offer = gr.Number(0, label="Tools per prompt (0: all)", precision=0, minimum=0)
            name = gr.Textbox("generated", label="Dataset name")
            augment = gr.Checkbox(True, label="Add negative, context and multi-turn samples")
            run = gr.Button("Generate", variant="primary")
            with gr.Accordion("Import a JSONL of records or GPT4Tools JSON into the review queue", open=False):
                imported = gr.File(label="records.jsonl or gpt4tools.json", file_types=[".jsonl", ".json"])
                import_button = gr.Button("Import", size="sm")
        with gr.Column():
            report = gr.Markdown()
            preview = gr.Dataframe(headers=PREVIEW_COLUMNS, interactive=False, wrap=True, max_height=420)
            dataset_file = gr.File(label="Dataset (JSONL)", interactive=False)

    def on_generate(folder_: str, files: list[str] | None, teacher_: str, n_: float, per_call_: float,
                    offer_: float, name_: str, augment_: bool, progress=gr.Progress(track_tqdm=True)):
        if not re.fullmatch(r"[\w.-]{1,64}", name_ or ""):
            raise gr.Error("The dataset name may use letters, digits, '.', '_' and '-' only.")
        if demo and Path(folder_.strip()) != ASSETS:  # the teacher and the count are checked by their components
            raise gr.Error("This shared demo generates from the example images or uploads, not a folder of the "
                           "server; run Toolsmith locally for that.")
        images = Path(folder_.strip())
        if files:
            images = Path(tempfile.mkdtemp(prefix="toolsmith-upload-"))
            for file in files:
                shutil.copy(file, images / Path(file).name)
        try:
            chosen = load_teacher((teacher_ or "template").strip())
            result = build_dataset(images, chosen, registry, data_home() / "datasets" / f"{name_}.jsonl",
                                   n=int(n_), per_call=int(per_call_), offer=int(offer_), augment_data=augment_)
        except (FileNotFoundError, ValueError, RuntimeError) as exc:
            raise gr.Error(str(exc)) from None
        out = data_home() / "datasets" / f"{name_}.jsonl"
        records = load_jsonl(out).records
        added = store.add(records)
        notes = "\n".join(f"- {line}" for line in result.generation.skipped_files + result.generation.jobs_failed)
        text = (f"{result.markdown()}\n\n**{added} new records queued for review** · dataset `{out}`"
                + (f"\n\n{notes}" if notes else ""))
        rows = [[r.kind, r.instruction, ", ".join(r.used_tools()), r.answer or ""] for r in records[:50]]
        download = Path(tempfile.mkdtemp(prefix="toolsmith-dataset-")) / out.name  # served from the temp dir
        shutil.copy(out, download)
        return text, rows, str(download)

    def on_import(file: str | None):
        if not file:
            raise gr.Error("Choose a file first.")
        path = Path(file)
        if path.suffix == ".json":
            try:
                samples = json.loads(path.read_text())
                records = [from_gpt4tools(sample, tools=registry.tools) for sample in samples]
            except (json.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
                raise gr.Error(f"Not GPT4Tools JSON: {exc}") from None
            problems = []
        else:
            loaded = load_jsonl(path)
            records, problems = loaded.records, loaded.errors
        added = store.add(records)
        lines = "\n".join(f"- {p}" for p in problems[:20])
        return f"Imported **{added}** new records ({len(records) - added} already there).\n{lines}"

    run.click(on_generate, [folder, uploads, teacher, n, per_call, offer, name, augment],
              [report, preview, dataset_file], api_name="generate", concurrency_limit=1)
    import_button.click(on_import, [imported], [report], api_name="import_records")
