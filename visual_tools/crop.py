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
    inputs = (Input("image_path", "image_path"), Input("coordinates", "box"))
    output = "image_path"
    op = "crop"
    backend = "Pillow"

    def forward(self, image_path: Path, coordinates: str) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        return image.crop(parse_box(coordinates, *image.size))
