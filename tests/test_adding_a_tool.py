"""A tool is one file: a module of the visual_tools package, found by the registry, offered in the prompts and asked
for by the template teacher in its own phrasings."""
import shutil
import sys
from pathlib import Path

import pytest

import visual_tools
from training.data.generate import generate, generation_prompt
from training.data.records import load_jsonl
from training.data.render import examples
from training.data.teachers import Annotation, TemplateTeacher
from visual_tools import registry

ASSETS = Path(__file__).resolve().parent.parent / "assets"
BLUR = '''"""Blur Something In The Photo: Pillow's Gaussian blur (the whole photo: a test's tool)."""
from pathlib import Path

from PIL import Image, ImageFilter

from .base import Input, Tool


class BlurSomething(Tool):
    name = "Blur Something In The Photo"
    description = ("useful when you want to blur something in the photo. The input to this tool should be a comma "
                   "separated string of two, representing the image_path and the thing to blur")
    purpose = "blur the named thing in a photo"
    inputs = (Input("image_path", "image_path"), Input("thing", "text"))
    output = "image_path"
    op = "blur"
    backend = "Pillow"
    phrasings = ("Blur the {object} in this photo.", "can you blur out the {object}?")
    arg_slots = {"thing": "object"}

    def forward(self, image_path: Path, thing: str) -> Image.Image:
        return Image.open(image_path).filter(ImageFilter.GaussianBlur(4))
'''


@pytest.fixture
def blur_tool(tmp_path, monkeypatch):
    """`visual_tools/blur.py`, as a user would add it; its folder joins the package's path, so the repo stays as is."""
    folder = tmp_path / "more_tools"
    folder.mkdir()
    (folder / "blur.py").write_text(BLUR)
    monkeypatch.setattr(visual_tools, "__path__", [*visual_tools.__path__, str(folder)])
    monkeypatch.setattr(registry, "TOOL_CLASSES", registry.discover())
    yield
    sys.modules.pop("visual_tools.blur", None)


def test_a_tool_in_one_file_is_listed_offered_and_generated(blur_tool, tmp_path):
    assert list(registry.TOOL_CLASSES) == [*visual_tools.TOOL_CLASSES, "BlurSomething"]  # the others keep their order
    blur = registry.ToolRegistry.from_load(None).get("Blur Something In The Photo")
    assert blur.availability() == (True, "")
    tools = registry.ToolRegistry.from_load("Image2Canny_cpu,BlurSomething_cpu")
    assert f"2. {blur.name}: {blur.description}" in generation_prompt(Annotation("a cat"), tools.all(), 4)

    images = tmp_path / "images"
    images.mkdir()
    for name in ("chelsea.png", "annotations.json"):
        shutil.copy(ASSETS / name, images / name)
    generate(images, TemplateTeacher(), tools, tmp_path / "raw.jsonl", n=6, per_call=6)
    record = next(r for r in load_jsonl(tmp_path / "raw.jsonl").records if r.used_tools() == [blur.name])
    image, thing = record.steps[0].args
    assert thing in ("cat", "cat's face") and record.instruction in [p.format(object=thing) for p in blur.phrasings]
    prompt, completion = examples(record, tools.tools)[0]
    assert f"> {blur.name}: {blur.description}" in prompt
    assert f"Action: {blur.name}\nAction Input: {image}, {thing}" in completion
