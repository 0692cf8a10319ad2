"""The Tools tab: every tool with its backend and availability, and a box to run one directly."""
from __future__ import annotations


import gradio as gr

from .base import ToolInputError
from .image_store import ImageStore
from .invoke import ToolTimeout, invoke
from .registry import ToolRegistry, memory_text
from .zerogpu import on_gpu

# Status (why a tool is missing, how to get it) next to the name, and widths that fit a 1280 px window, wrapped
COLUMNS = ["Tool", "Status", "Inputs", "Output", "Device", "GPU memory", "Backend", "Class"]
WIDTHS = ["14%", "31%", "10%", "9%", "6%", "7%", "13%", "10%"]


def tool_rows(registry: ToolRegistry) -> list[list[str]]:
    rows = []
    for tool in registry.all():
        info = tool.schema()
        status = (("✅ loaded" if info["loaded"] else "✅ available") if info["available"]
                  else f"❌ {info['reason']}")
        rows.append([info["name"], status, ", ".join(i["name"] for i in info["inputs"]), info["output"],
                     info["device"], memory_text(info),
                     info["backend"] + (f" · {info['checkpoint']}" if info["checkpoint"] else ""), info["class"]])
    return rows


def build_tools_tab(registry: ToolRegistry, tool_timeout: float | None = None) -> None:
    """Build the Tools tab inside the current gr.Blocks (it wires itself: nothing to return)."""
    store = gr.State(None, delete_callback=lambda s: s and s.delete())
    gr.Markdown(f"*GPU memory*: the weights in float16 on CUDA, from each checkpoint's parameter count, until a tool "
                f"loads, then measured on its device; activations and the CUDA context come on top. Every tool "
                f"here: ≈ {registry.gpu_estimate_mb() / 1000:.1f} GB.")
    table = gr.Dataframe(tool_rows(registry), headers=COLUMNS, interactive=False, wrap=True,
                         column_widths=WIDTHS)
    refresh = gr.Button("Refresh", size="sm")
    gr.Markdown("### Try a tool\nInputs after the image are written as the model writes them "
                "(comma-separated), e.g. a question, or `[x1, y1, x2, y2]` for *Crop Image*.")
    names = [tool.name for tool in registry.available()]
    with gr.Row():
        with gr.Column():
            tool = gr.Dropdown(names, value=names[0] if names else None, label="Tool")
            image = gr.Image(type="filepath", label="Image", sources=["upload", "clipboard"], elem_id="tool-image")
            text = gr.Textbox(label="Other inputs")
            run = gr.Button("Run", variant="primary")
        with gr.Column():
            out_image = gr.Image(label="Output image", interactive=False, elem_id="tool-output")
            out_text = gr.Textbox(label="Observation (what the model would read)", interactive=False)

    def run_tool(name: str | None, image_path: str | None, extra: str, st: ImageStore | None):
        st = st if st is not None and st.root.is_dir() else ImageStore.new_session()  # none yet, or swept
        if not name:
            raise gr.Error("Pick a tool.")
        try:
            chosen = registry.get(name)
            parts = []
            for spec in chosen.inputs:
                if spec.type == "image_path":
                    if not image_path:
                        raise ToolInputError(f"{chosen.name} needs an image: upload one.")
                    parts.append(st.save_upload(image_path))
            if extra.strip():
                parts.append(extra.strip())
            result = invoke(chosen, ", ".join(parts), st, tool_timeout)
        except (ToolInputError, ToolTimeout) as exc:
            raise gr.Error(str(exc)) from None
        except Exception as exc:  # the tool's own failure: shown, and the app keeps serving
            raise gr.Error(f"{name} failed: {type(exc).__name__}: {exc}") from None
        return (str(st.resolve(result.image)) if result.image else None), result.text, st, tool_rows(registry)

    run.click(on_gpu(run_tool), [tool, image, text, store], [out_image, out_text, store, table], api_name="run_tool")
    refresh.click(lambda: tool_rows(registry), None, table, api_name="tool_table")
