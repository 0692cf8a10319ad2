import inspect
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import BlipForConditionalGeneration, BlipForQuestionAnswering, BlipProcessor

from visual_tools import (TEXT_TOOL_CLASSES, TOOL_CLASSES, VISUAL_TOOL_CLASSES, Input, Tool, ToolInputError,
                          ToolRegistry, invoke, parse_load)
from visual_tools.registry import ORDER
from visual_tools.blip import ImageCaptioning, VisualQuestionAnswering
from visual_tools.canny import Image2Canny


@pytest.mark.parametrize("cls", TOOL_CLASSES.values(), ids=list(TOOL_CLASSES))
def test_every_tool_keeps_the_contract(cls):
    assert cls.name and cls.description and cls.output in ("image_path", "text")
    assert cls.inputs or cls.name == "Calendar"  # Toolformer's `[Calendar()]` takes nothing
    assert cls.backend and "_" not in cls.op
    assert list(inspect.signature(cls.forward).parameters)[1:] == [i.name for i in cls.inputs]
    registry = ToolRegistry.from_load(f"{cls.__name__}_cpu")  # brings the tools it reuses
    tool = registry.by_class(cls.__name__)
    assert set(tool.parts) == set(cls.requires)
    ok, reason = tool.availability()
    assert ok or "python -m visual_tools fetch" in reason or "pip install" in reason
    assert tool.schema()["available"] == ok and tool.schema()["reason"] == reason


def test_the_registry_finds_every_tool_in_the_prompt_order():
    assert list(TOOL_CLASSES)[:len(ORDER)] == list(ORDER)  # what the shipped adapter was trained on
    assert len(VISUAL_TOOL_CLASSES) == 31 and list(TEXT_TOOL_CLASSES) == ["Calculator", "Calendar", "WikiSearch",
                                                                          "QA", "MT"]


def test_the_registry_has_unique_names():
    names = [cls.name for cls in TOOL_CLASSES.values()]
    assert len(names) == len(set(names)) == len(TOOL_CLASSES)


def test_tool_names_are_gpt4tools_exact():
    names = {cls.__name__: cls.name for cls in TOOL_CLASSES.values()}
    assert names["Image2Canny"] == "Edge Detection On Image"
    assert names["ImageCaptioning"] == "Get Photo Description"
    assert names["VisualQuestionAnswering"] == "Answer Question About The Image"
    assert names["Text2Box"] == "Detect the Give Object"  # GPT4Tools' typo, kept for its released weights
    assert names["HedText2Image"] == "Generate Image Condition On Soft Hed Boundary Image"


def test_a_tool_whose_forward_does_not_match_its_inputs_is_rejected():
    with pytest.raises(TypeError, match="must take exactly its inputs"):
        class Bad(Tool):
            name, description, purpose, output = "Bad", "bad", "bad", "text"
            inputs = (Input("image_path", "image_path"),)

            def forward(self, path):
                return ""


def test_parse_input_splits_on_commas_like_gpt4tools():
    vqa = VisualQuestionAnswering()
    assert vqa.parse_input("image/ab.png, what is it, really?") == {
        "image_path": "image/ab.png", "question": "what is it, really?"}
    assert Image2Canny().parse_input('"image/ab.png, extra words"') == {"image_path": "image/ab.png"}
    with pytest.raises(ToolInputError, match="needs 2 comma-separated inputs"):
        vqa.parse_input("image/ab.png")


def test_canny_finds_the_box_edges(store, box_image):
    name = store.save_upload(box_image)
    result = invoke(Image2Canny(), name, store)
    assert result.image == result.text and "_edge_" in result.image
    edges = np.array(Image.open(store.resolve(result.image)))[:, :, 0]
    assert edges.shape == (384, 512)
    rows, cols = np.nonzero(edges)
    # the box spans 100..300 x 60..240 of 400x300, scaled by 1.28: edges near x=128/384, y=77/307
    assert abs(cols.min() - 128) <= 3 and abs(cols.max() - 384) <= 3
    assert abs(rows.min() - 77) <= 3 and abs(rows.max() - 307) <= 3
    assert edges[190, 250] == 0  # inside the box: no edge


def test_invoke_refuses_paths_outside_the_session(store):
    for bad in ("../../etc/passwd", "/etc/passwd"):
        with pytest.raises(ToolInputError, match="outside this session"):
            invoke(Image2Canny(), bad, store)


def test_blip_tools_load_saved_checkpoints_and_run(store, box_image, tiny_blip):
    name = store.save_upload(box_image)
    caption = ImageCaptioning(checkpoint=str(tiny_blip["caption"]))
    vqa = VisualQuestionAnswering(checkpoint=str(tiny_blip["vqa"]))
    assert caption.availability() == (True, "") and vqa.availability() == (True, "")
    got_caption = invoke(caption, name, store).text
    got_answer = invoke(vqa, f"{name}, how many cats?", store).text
    # the same checkpoints run by hand give the same text: the tool adds nothing and hides nothing
    image = Image.open(store.resolve(name)).convert("RGB")
    for folder, cls, question, got in ((tiny_blip["caption"], BlipForConditionalGeneration, None, got_caption),
                                       (tiny_blip["vqa"], BlipForQuestionAnswering, "how many cats?", got_answer)):
        processor, model = BlipProcessor.from_pretrained(folder), cls.from_pretrained(folder).eval()
        with torch.inference_mode():
            out = model.generate(**processor(images=image, text=question, return_tensors="pt"), max_new_tokens=30)
        assert got == processor.decode(out[0], skip_special_tokens=True).strip()


def test_missing_checkpoint_is_unavailable_with_the_fix(tmp_path):
    tool = VisualQuestionAnswering(checkpoint=str(tmp_path / "nowhere"))
    ok, reason = tool.availability()
    assert not ok and "python -m visual_tools fetch VisualQuestionAnswering" in reason
    with pytest.raises(ToolInputError, match="unavailable"):
        tool(image_path=tmp_path, question="what?")


def test_checkpoint_comes_from_the_environment(monkeypatch, tiny_blip):
    monkeypatch.setenv("TOOLSMITH_IMAGECAPTIONING_CHECKPOINT", str(tiny_blip["caption"]))
    assert ImageCaptioning().checkpoint == str(tiny_blip["caption"])


def test_registry_matches_names_exactly_then_loosely():
    registry = ToolRegistry.from_load("Image2Canny_cpu")
    assert registry.get("Edge Detection On Image").name == "Edge Detection On Image"
    assert registry.get("  edge  detection on IMAGE ").name == "Edge Detection On Image"
    with pytest.raises(ToolInputError, match=r"not a valid tool, try one of \[Edge Detection On Image\]"):
        registry.get("Edge Detector")


def test_unavailable_tools_are_not_offered():
    registry = ToolRegistry.from_load("Image2Canny_cpu,VisualQuestionAnswering_cpu")
    assert [t.name for t in registry.available()] == ["Edge Detection On Image"]
    with pytest.raises(ToolInputError, match="unavailable here"):
        registry.get("Answer Question About The Image")


def test_parse_load_syntax():
    assert parse_load("ImageCaptioning_cuda:0, Image2Canny_cpu") == {"ImageCaptioning": "cuda:0",
                                                                      "Image2Canny": "cpu"}
    assert set(parse_load(None)) == set(TOOL_CLASSES)
    for bad in ("Nope_cpu", "Image2Canny", "Image2Canny_gpu0"):
        with pytest.raises(ValueError):
            parse_load(bad)


def test_list_cli_prints_every_tool_as_json():
    out = subprocess.run([sys.executable, "-m", "visual_tools", "list", "--json"], capture_output=True,
                         text=True, check=True).stdout
    rows = json.loads(out)
    assert {r["name"] for r in rows} == {cls.name for cls in TOOL_CLASSES.values()}
    for row in rows:
        assert {"name", "description", "inputs", "output", "available", "reason"} <= set(row)
    canny = next(r for r in rows if r["class"] == "Image2Canny")
    assert canny["available"] and canny["inputs"] == [{"name": "image_path", "type": "image_path"}]
