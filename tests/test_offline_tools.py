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


def test_ocr_reads_rendered_text(store, tmp_path):
    from PIL import ImageDraw, ImageFont

    from visual_tools.ocr import TextDetection
    image = Image.new("RGB", (512, 256), "white")
    draw = ImageDraw.Draw(image)
    draw.text((20, 40), "Toolsmith", fill="black", font=ImageFont.load_default(size=40))
    draw.text((20, 140), "PRICE 42 EUR", fill="black", font=ImageFont.load_default(size=40))
    image.save(tmp_path / "text.png")
    found = invoke(TextDetection(), store.save_upload(tmp_path / "text.png"), store).text
    assert found.startswith("Found 2 text line(s)") and '"Toolsmith" at [' in found
    assert "PRICE" in found and "42" in found and "EUR" in found
    blank = store.save_upload(Image.new("RGB", (128, 128), "white"))
    assert invoke(TextDetection(), blank, store).text == "No text found in the image."


def test_faces_found_in_portraits_not_in_cats(store):
    from visual_tools.faces import FaceDetection, detect_faces
    portrait = Image.open(ASSETS / "grace_hopper.jpg").convert("RGB")  # 512x600
    (x1, y1, x2, y2), = detect_faces(np.array(portrait))
    assert x1 < 256 < x2 and y1 < 200 < y2 and (x2 - x1) > 100  # her face, upper middle
    assert detect_faces(np.array(Image.open(ASSETS / "chelsea.png").convert("RGB"))) == []
    result = invoke(FaceDetection(), store.save_upload(ASSETS / "grace_hopper.jpg"), store)
    assert "_face_" in result.image


def test_pose_openpose_skeleton_on_a_person_and_none_on_a_cat(store):
    from visual_tools.pose import COLORS, Image2Pose
    result = invoke(Image2Pose(), store.save_upload(ASSETS / "astronaut.png"), store)
    skeleton = np.array(Image.open(store.resolve(result.image)).convert("RGB"))
    assert "_human-pose_" in result.image and skeleton.shape == (512, 512, 3)

    def disc(keypoint: int) -> tuple[float, float] | None:  # where OpenPose's colour for this keypoint is
        ys, xs = np.nonzero((skeleton == COLORS[keypoint]).all(axis=2))
        return (xs.mean(), ys.mean()) if len(xs) else None

    nose, neck, right_shoulder, left_shoulder = disc(0), disc(1), disc(2), disc(5)
    assert 180 < nose[0] < 270 and 60 < nose[1] < 200  # on her face
    assert nose[1] < neck[1] and right_shoulder[0] < neck[0] < left_shoulder[0]  # facing us: her right on our left
    assert (skeleton == [int(c * 0.6) for c in COLORS[12]]).all(axis=2).sum() > 100  # the neck-nose limb
    assert 0.002 < skeleton.max(axis=2).astype(bool).mean() < 0.2  # a skeleton, not a filled picture
    with pytest.raises(ToolInputError, match="no human pose found"):
        invoke(Image2Pose(), store.save_upload(ASSETS / "chelsea.png"), store)


def test_openpose_keypoints_drop_unseen_and_offimage_landmarks():
    from types import SimpleNamespace

    from visual_tools.pose import openpose_keypoints
    marks = [SimpleNamespace(x=0.5, y=0.5, visibility=0.9) for _ in range(33)]
    marks[11], marks[12] = SimpleNamespace(x=0.6, y=0.4, visibility=0.9), SimpleNamespace(x=0.2, y=0.4, visibility=0.9)
    marks[14] = SimpleNamespace(x=0.5, y=0.5, visibility=0.1)  # right elbow: not seen
    marks[27] = SimpleNamespace(x=0.5, y=1.3, visibility=0.9)  # left ankle: below the picture
    points = openpose_keypoints(marks, 100, 200)
    assert len(points) == 18 and points[1] == (40.0, 80.0)  # the neck: between the shoulders, in pixels
    assert points[2] == (20.0, 80.0) and points[5] == (60.0, 80.0)
    assert points[3] is None and points[13] is None and points[0] == (50.0, 100.0)
    marks[12] = SimpleNamespace(x=0.2, y=0.4, visibility=0.0)
    assert openpose_keypoints(marks, 100, 200)[1] is None  # no neck without both shoulders


def test_super_resolution_doubles_and_keeps_content(store, box_image):
    from visual_tools.superres import SuperResolution
    name = store.save_upload(box_image)
    result = invoke(SuperResolution(), name, store)
    big = np.array(Image.open(store.resolve(result.image)).convert("L")).astype(float)
    small = np.array(Image.open(store.resolve(name)).convert("L")).astype(float)
    assert big.shape == (768, 1024) and "_upscale_" in result.image
    assert np.abs(big[::2, ::2] - small).mean() < 8  # the same picture, twice the pixels

