"""Half precision, as every model tool runs on CUDA, tried on the CPU: the tiny models load in float16 through
the tools' own code and get float16 inputs (a dtype mismatch a GPU would hit raises here too); the weights'
memory is then measured from what loaded, a shared Stable Diffusion base counted once."""
from pathlib import Path

import pytest
import torch
from PIL import Image

from tiny_models import (build_tiny_bert_qa, build_tiny_blip, build_tiny_controlnet, build_tiny_dpt,
                         build_tiny_grounding_dino, build_tiny_m2m100, build_tiny_sam, build_tiny_sd,
                         build_tiny_shap_e, build_tiny_upernet)
from visual_tools import ToolRegistry, invoke
from visual_tools.base import Tool
from visual_tools.registry import TOOL_CLASSES, memory_text


def build_hed(folder):
    from visual_tools._hed_network import HedNetwork
    from visual_tools.hed import WEIGHTS
    folder.mkdir()
    torch.save(HedNetwork().state_dict(), folder / WEIGHTS)  # the file layout of lllyasviel/Annotators
    return folder


BUILDERS = {  # class -> (checkpoint builder, its text input if it has one)
    "ImageCaptioning": (lambda f: build_tiny_blip(f, "caption"), None),
    "VisualQuestionAnswering": (lambda f: build_tiny_blip(f, "vqa"), "what is in the image?"),
    "Segmenting": (build_tiny_sam, None),
    "Text2Box": (build_tiny_grounding_dino, "a box"),
    "Image2Depth": (build_tiny_dpt, None),
    "Image2Seg": (build_tiny_upernet, None),
    "InstructPix2Pix": (lambda f: build_tiny_sd(f, "pix2pix"), "make it snow"),
    "MT": (build_tiny_m2m100, "Der Hund schläft im Garten."),
    "Image2Hed": (build_hed, None),
    "Text2Shape": (build_tiny_shap_e, "a shark"),
}


@pytest.fixture
def small_photo(tmp_path):
    """The cat at 40 x 30: float16 convolutions are slow on a CPU."""
    path = tmp_path / "small.png"
    Image.open(Path(__file__).parent.parent / "assets" / "chelsea.png").resize((40, 30)).save(path)
    return path


@pytest.fixture
def half(monkeypatch):
    monkeypatch.setattr(Tool, "dtype", property(lambda self: torch.float16))


def weights_mb(tool: Tool) -> float:
    """Its parameters at 2 bytes each and its buffers (position tables, counters) at their own size."""
    params = {id(p): p for m in tool.modules() for p in m.parameters()}.values()
    buffers = {id(b): b for m in tool.modules() for b in m.buffers()}.values()
    return (sum(p.numel() * 2 for p in params) + sum(b.numel() * b.element_size() for b in buffers)) / 1e6


@pytest.mark.parametrize("class_name", sorted(BUILDERS))
def test_model_tools_run_in_float16(half, class_name, tmp_path, small_photo):
    build, text = BUILDERS[class_name]
    tool = TOOL_CLASSES[class_name]("cpu", str(build(tmp_path / class_name)))
    # the tests' small settings (the attributes a tool does not have are never read)
    tool.size, tool.steps, tool.min_iou, tool.points_per_side = 32, 2, -1.0, 2
    tool.box_threshold = tool.text_threshold = 0.0
    # called directly: the session store would upscale the photo to 512 px
    out = tool(**{spec.name: small_photo if spec.type == "image_path" else text for spec in tool.inputs})
    assert isinstance(out, Image.Image if tool.output == "image_path" else str)
    modules = tool.modules()
    assert modules and all(p.dtype == torch.float16 for m in modules for p in m.parameters())
    assert tool.loaded_mb() == pytest.approx(weights_mb(tool)) and tool.loaded_mb() > 0
    assert memory_text(tool.schema()).endswith("MB loaded")  # tiny: megabytes, measured


def test_a_controlnet_counts_only_its_own_weights_and_qa_its_model(half, tmp_path, store, box_image):
    registry = ToolRegistry([TOOL_CLASSES["Text2Image"]("cpu", str(build_tiny_sd(tmp_path / "sd"))),
                             TOOL_CLASSES["CannyText2Image"]("cpu", str(build_tiny_controlnet(tmp_path / "cn"))),
                             TOOL_CLASSES["WikiSearch"](),
                             TOOL_CLASSES["QA"]("cpu", str(build_tiny_bert_qa(tmp_path / "qa")))])
    for tool in registry.all():
        tool.size, tool.steps = 32, 2
    controlnet, base = registry.by_class("CannyText2Image"), registry.by_class("Text2Image")
    invoke(controlnet, f"{store.save_upload(box_image)}, a wooden box", store)
    assert [type(m).__name__ for m in controlnet.modules()] == ["ControlNetModel"]
    assert controlnet.pipe.unet.dtype == torch.float16 and controlnet.pipe.unet is base.pipe.unet
    assert {type(m).__name__ for m in base.modules()} == {"UNet2DConditionModel", "AutoencoderKL", "CLIPTextModel"}
    assert controlnet.loaded_mb() == pytest.approx(weights_mb(controlnet)) and controlnet.loaded_mb() < base.loaded_mb()
    assert memory_text(controlnet.schema()).endswith("MB loaded, shares Text2Image")
    qa = registry.by_class("QA")
    invoke(qa, "Who wrote the Toolformer paper?", store)
    assert all(p.dtype == torch.float16 for p in qa.model.parameters())


def test_memory_estimates_before_loading():
    registry = ToolRegistry.from_load("CannyText2Image_cuda:0,Segmenting_cuda:0,Image2Canny_cpu")
    rows = {row["class"]: memory_text(row) for row in (t.schema() for t in registry.all())}
    assert rows == {"CannyText2Image": "≈ 0.7 GB, shares Text2Image", "Text2Image": "≈ 2.1 GB",
                    "Segmenting": "≈ 1.3 GB", "Image2Canny": "–"}
    assert registry.gpu_estimate_mb() == pytest.approx((361 + 1066 + 641) * 2)  # the SD base counted once
    other = TOOL_CLASSES["Segmenting"]("cuda:0", "facebook/sam-vit-base")
    assert other.gpu_estimate_mb() is None and memory_text(other.schema()) == "? (not the default checkpoint)"
    assert all(bool(cls.params_m) == bool(cls.checkpoints) for cls in TOOL_CLASSES.values())  # a size per model
