"""Detect, segment the detected object, replace and remove it: tiny Grounding DINO, SAM and inpainting."""
import pytest
from PIL import Image

from tiny_models import build_tiny_grounding_dino, build_tiny_sam, build_tiny_sd
from visual_tools import ToolInputError, ToolRegistry, invoke
from visual_tools.editing import RemoveSomething, ReplaceSomething
from visual_tools.grounding import Detection, ObjectSegmenting, Text2Box
from visual_tools.sam import Segmenting


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    root = tmp_path_factory.mktemp("grounding")
    registry = ToolRegistry([
        Text2Box("cpu", str(build_tiny_grounding_dino(root / "gdino"))),
        Segmenting("cpu", str(build_tiny_sam(root / "sam"))), ObjectSegmenting("cpu"),
        ReplaceSomething("cpu", str(build_tiny_sd(root / "inpaint", "inpaint"))), RemoveSomething("cpu"),
        Detection("cpu")])
    registry.by_class("Text2Box").box_threshold = registry.by_class("Text2Box").text_threshold = 0.0
    for name in ("ReplaceSomething", "RemoveSomething"):
        registry.by_class(name).size, registry.by_class(name).steps = 32, 2
    return registry


@pytest.mark.parametrize("tool, args, op", [
    ("Detect the Give Object", "a cat", "detect-something"),
    ("Detection", None, "detect-all"),
    ("Segment the given object", "the box", "segmentation"),
    ("Replace Something From The Photo", "the box, a wooden box", "replace-something"),
    ("Remove Something From The Photo", "the box", "remove-something"),
])
def test_detect_segment_edit(registry, store, box_image, tool, args, op):
    name = store.save_upload(box_image)
    result = invoke(registry.get(tool), f"{name}, {args}" if args else name, store)
    assert f"_{op}_{name[6:14]}_" in result.image
    assert Image.open(store.resolve(result.image)).size == (512, 384)


def test_nothing_detected_is_a_clear_error(registry, store, box_image):
    detector = registry.by_class("Text2Box")
    name = store.save_upload(box_image)
    detector.box_threshold = 1.01
    try:
        for tool in ("Detect the Give Object", "Segment the given object", "Remove Something From The Photo"):
            with pytest.raises(ToolInputError, match="no 'the dog' detected"):
                invoke(registry.get(tool), f"{name}, the dog", store)
    finally:
        detector.box_threshold = 0.0


def test_editing_brings_its_parts():
    registry = ToolRegistry.from_load("RemoveSomething_cuda:0")
    assert {type(t).__name__ for t in registry.all()} == {
        "RemoveSomething", "ReplaceSomething", "ObjectSegmenting", "Text2Box", "Segmenting"}
    assert all(t.device == "cuda:0" for t in registry.all())


def test_detection_queries_cover_coco_within_the_text_limit(registry):
    from visual_tools.grounding import COCO_CLASSES
    detector = registry.by_class("Text2Box")
    detector.ensure_ready()
    queries = Detection.queries(detector)
    assert [name for q in queries for name in q.split(" . ")] == list(COCO_CLASSES) and len(COCO_CLASSES) == 80
    limit = detector.model.config.max_text_len
    assert all(len(detector.processor.tokenizer(q + " .")["input_ids"]) <= limit or " . " not in q for q in queries)
