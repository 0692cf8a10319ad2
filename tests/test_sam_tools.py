"""Segment Anything: a tiny SAM saved with save_pretrained, loaded by the tool's own code."""
import numpy as np
import pytest
from PIL import Image

from tiny_models import build_tiny_sam
from visual_tools import ToolInputError, invoke
from visual_tools.sam import Segmenting, overlay


@pytest.fixture(scope="module")
def sam(tmp_path_factory):
    tool = Segmenting("cpu", str(build_tiny_sam(tmp_path_factory.mktemp("sam"))))
    tool.points_per_side = 4
    return tool


def test_segment_everything_runs_the_grid(sam, store, box_image):
    name = store.save_upload(box_image)
    sam.min_iou = -1.0  # a random model is never confident: keep what it proposes
    result = invoke(sam, name, store)
    assert f"_segment-image_{name[6:14]}_" in result.image
    assert Image.open(store.resolve(result.image)).size == (512, 384)
    masks = sam.segment_everything(Image.open(store.resolve(name)))
    assert 1 <= len(masks) <= 16 and all(m.shape == (384, 512) for m in masks)
    sam.min_iou = 2.0  # nothing can pass: a clear error, not an empty picture
    with pytest.raises(ToolInputError, match="no confident segment"):
        invoke(sam, name, store)


def test_masks_for_boxes(sam, box_image):
    image = Image.open(box_image).convert("RGB")
    sam.ensure_ready()
    masks = sam.masks_for_boxes(image, [[100, 60, 300, 240], [0, 0, 50, 50]])
    assert len(masks) == 2 and masks[0].shape == (300, 400) and masks[0].dtype == bool


def test_overlay_tints_only_the_mask():
    image = Image.new("RGB", (4, 4), (0, 0, 0))
    mask = np.zeros((4, 4), bool)
    mask[0, 0] = True
    out = np.array(overlay(image, [mask]))
    assert out[0, 0].any() and not out[3, 3].any()
