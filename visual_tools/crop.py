"""Crop Image (GPT4Tools' generation prompt names it): cut a box out of an image."""
from __future__ import annotations

import re
from pathlib import Path

from PIL import Image

from .base import Input, Tool, ToolInputError

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parse_box(text: str, width: int, height: int) -> tuple[int, int, int, int]:
    """`[x1, y1, x2, y2]` in pixels (or all in 0..1 as fractions of the size), clamped to the image."""
    values = [float(v) for v in _NUMBER.findall(text)]
    if len(values) != 4:
        raise ToolInputError(f"coordinates must be four numbers [x1, y1, x2, y2]; got '{text}'")
    if all(0 <= v <= 1 for v in values):
        values = [v * s for v, s in zip(values, (width, height, width, height))]
    x1, y1, x2, y2 = (round(v) for v in values)
    x1, x2 = sorted((max(0, min(width, x1)), max(0, min(width, x2))))
    y1, y2 = sorted((max(0, min(height, y1)), max(0, min(height, y2))))
    if x2 - x1 < 2 or y2 - y1 < 2:
        raise ToolInputError(f"the box {text} leaves nothing of a {width}x{height} image")
    return x1, y1, x2, y2


class CropImage(Tool):
    name = "Crop Image"
    description = ("useful when you want to crop a region or a part from the image. "
                   "The input to this tool should be a comma separated string of two, representing the image_path "
                   "and the coordinates with the format of [x1, y1, x2, y2] that represents the top left and "
                   "bottom right of the cropped region")
    purpose = "cut out a region: [left, top, right, bottom] in pixels or fractions"
    inputs = (Input("image_path", "image_path"), Input("coordinates", "box"))
    output = "image_path"
    op = "crop"
    result = "the cropped image"
    backend = "Pillow"
    phrasings = ("Crop the {object} out of the image.", "Cut out the region {box} from the picture.",
                 "I only want the part with the {object}; crop it, please.", "Crop the image to the {object}.",
                 "Zoom in on the {object} by cropping the photo.", "Crop the {region} of this image.",
                 "Keep only the {region} of the picture.", "Cut the {region} out of the photo.",
                 "crop x {x1}-{x2}, y {y1}-{y2}", "cut out x from {x1} to {x2} and y from {y1} to {y2}",
                 "crop a {w}x{h} box starting at ({x1}, {y1})", "crop {w} by {h} pixels from the point {x1},{y1}",
                 "top-left corner ({x1}, {y1}), bottom-right corner ({x2}, {y2}): crop that",
                 "crop from pixel {x1},{y1} to pixel {x2},{y2}", "crop: left={x1} top={y1} right={x2} bottom={y2}",
                 "please crop the image to {x1},{y1},{x2},{y2}", "crop {x1} {y1} {x2} {y2}",
                 "crop the rectangle starting at x={x1}, y={y1}, {w} wide and {h} tall",
                 "i want the area between x {x1} and {x2}, y {y1} and {y2}", "crop out the {region} for me",
                 "zoom into the {region}", "trim it to the {region}", "crop to {box}", "crop the area {box} please",
                 "cut out {box} from the photo", "crop from ({x1}, {y1}) to ({x2}, {y2})",
                 "crop the rectangle {x1},{y1} - {x2},{y2}", "cut the picture to x {x1} to {x2}, y {y1} to {y2}",
                 "crop it: left {x1}, top {y1}, right {x2}, bottom {y2}", "keep only pixels {x1} {y1} {x2} {y2}",
                 "crop with the box ({x1}, {y1}, {x2}, {y2})", "crop the fractions {fbox}",
                 "crop to {fbox} of the image (fractions)", "crop the part {fbox}, in fractions of the size",
                 "crop the {region}", "only keep the {region} please", "can you cut away everything but the {region}?",
                 "crop it to the {region}", "just the {region} of the photo")

    def forward(self, image_path: Path, coordinates: str) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        return image.crop(parse_box(coordinates, *image.size))
