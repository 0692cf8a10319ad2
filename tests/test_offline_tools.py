"""Offline backends checked on real content: where the lines, strokes and crops really are."""
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from visual_tools import ToolInputError, invoke
from visual_tools.crop import CropImage, parse_box
from visual_tools.lines import Image2Line
from visual_tools.scribble import Image2Scribble

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def white_pixels(store, name):
    return np.array(Image.open(store.resolve(name)).convert("L")) > 127


def test_lines_trace_the_box_sides(store, box_image):
    name = store.save_upload(box_image)  # 512x384; the box spans x 128..384, y 77..307
    result = invoke(Image2Line(), name, store)
    assert "_line-of_" in result.image
    lines = white_pixels(store, result.image)
    rows, cols = np.nonzero(lines)
    assert abs(cols.min() - 128) <= 3 and abs(cols.max() - 384) <= 3
    assert abs(rows.min() - 77) <= 3 and abs(rows.max() - 307) <= 3
    assert lines[192, 128 - 2:128 + 3].any() and not lines[192, 250]  # on the left side, none inside


def test_lines_on_a_photo(store):
    name = store.save_upload(ASSETS / "astronaut.png")
    lines = white_pixels(store, invoke(Image2Line(), name, store).image)
    assert 0.002 < lines.mean() < 0.2  # some straight structure, far from all of it


def test_scribble_strokes_follow_outlines(store, box_image):
    name = store.save_upload(box_image)
    strokes = white_pixels(store, invoke(Image2Scribble(), name, store).image)
    assert strokes[192, 126:131].any() and strokes[75:80, 250].any()  # left and top sides
    assert not strokes[192, 250] and not strokes[20, 20]  # not inside, not in the empty corner
    photo = store.save_upload(ASSETS / "chelsea.png")
    assert 0.01 < white_pixels(store, invoke(Image2Scribble(), photo, store).image).mean() < 0.5


def test_crop_cuts_the_given_box(store, box_image):
    name = store.save_upload(box_image)
    result = invoke(CropImage(), f"{name}, [100, 50, 200, 120]", store)
    crop = Image.open(store.resolve(result.image))
    assert crop.size == (100, 70) and "_crop_" in result.image
    pixels = np.array(crop.convert("L"))
    assert pixels[40, 50] == 255 and pixels[5, 5] == 0  # inside the box / above it


@pytest.mark.parametrize("text, box", [("[10, 20, 110, 220]", (10, 20, 110, 220)),
                                       ("(0.5, 0.5, 1.0, 1.0)", (256, 192, 512, 384)),
                                       ("[300, 400, -5, 10]", (0, 10, 300, 384))])
def test_parse_box(text, box):
    assert parse_box(text, 512, 384) == box


@pytest.mark.parametrize("text", ["[1, 2, 3]", "the cat", "[5, 5, 5, 5]"])
def test_bad_boxes_are_refused(text):
    with pytest.raises(ToolInputError):
        parse_box(text, 512, 384)
