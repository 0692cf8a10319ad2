"""Stable Diffusion tools: tiny pipelines saved with save_pretrained, loaded by the tools' own code."""
import pytest
from PIL import Image

from tiny_models import build_tiny_controlnet, build_tiny_sd
from visual_tools import ToolRegistry, invoke
from visual_tools.diffusion import _ControlNet
from visual_tools.registry import TOOL_CLASSES

CONTROLNETS = [name for name, cls in TOOL_CLASSES.items() if issubclass(cls, _ControlNet)]


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-sd")
    checkpoints = {"Text2Image": build_tiny_sd(root / "sd"), "InstructPix2Pix": build_tiny_sd(root / "p2p", "pix2pix")}
    controlnet = build_tiny_controlnet(root / "controlnet")
    checkpoints.update({name: controlnet for name in CONTROLNETS})
    registry = ToolRegistry(TOOL_CLASSES[name]("cpu", str(path)) for name, path in checkpoints.items())
    for tool in registry.all():
        tool.size, tool.steps = 32, 2
    return registry


def test_eight_controlnet_tools_share_one_base():
    assert len(CONTROLNETS) == 8
    assert all(TOOL_CLASSES[name].requires == ("Text2Image",) for name in CONTROLNETS)


def test_text2image(registry, store):
    result = invoke(registry.get("Generate Image From User Input Text"), "a red bicycle", store)
    assert Image.open(store.resolve(result.image)).size == (32, 32)
    assert result.image.count("_") == 0  # a new root image, no parent


def test_instruct_pix2pix(registry, store, box_image):
    name = store.save_upload(box_image)
    result = invoke(registry.get("Instruct Image Using Text"), f"{name}, make it look like a painting", store)
    assert Image.open(store.resolve(result.image)).size == (32, 24)
    assert f"_pix2pix_{name[6:14]}_{name[6:14]}" in result.image


@pytest.mark.parametrize("class_name", CONTROLNETS)
def test_controlnet_tool(registry, store, box_image, class_name):
    tool = registry.by_class(class_name)
    name = store.save_upload(box_image)
    result = invoke(tool, f"{name}, a wooden box, on a table", store)
    assert Image.open(store.resolve(result.image)).size == (32, 24)  # the condition, fitted to 32 px
    assert f"_{tool.op}_{name[6:14]}_" in result.image
    assert tool.pipe.unet is registry.get("Generate Image From User Input Text").pipe.unet


def test_controlnet_unavailable_without_its_base(tmp_path):
    registry = ToolRegistry.from_load("CannyText2Image_cpu")
    assert set(t.name for t in registry.all()) == {"Generate Image Condition On Canny Image",
                                                  "Generate Image From User Input Text"}
    ok, reason = registry.by_class("CannyText2Image").availability()
    assert not ok and "python -m visual_tools fetch CannyText2Image" in reason


def test_text_to_3d_renders_four_views(tmp_path, store):
    from tiny_models import build_tiny_shap_e
    from visual_tools.shape import Text2Shape
    tool = Text2Shape("cpu", str(build_tiny_shap_e(tmp_path / "shap-e")))
    tool.size, tool.steps = 32, 1
    result = invoke(tool, "a shark", store)
    assert Image.open(store.resolve(result.image)).size == (64, 64) and "_" not in result.image
