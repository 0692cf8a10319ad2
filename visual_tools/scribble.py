"""Sketch Detection On Image: a scribble map (thick white strokes on black) for ControlNet scribble."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input, Tool


class Image2Scribble(Tool):
    name = "Sketch Detection On Image"
    description = ("useful when you want to generate a scribble of the image. "
                   "like: generate a scribble of this image, or generate a sketch from this image, "
                   "detect the sketch from this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "a rough sketch of an image: thick strokes of its main outlines"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "scribble"
    result = "the sketch"
    backend = "OpenCV smoothed Canny strokes (classical, in place of GPT4Tools' HED scribble)"
    phrasings = ("Turn this photo into a scribble.", "Generate a sketch from this image.",
                 "Make a rough pencil sketch of the {object} picture.", "Detect the sketch of this image.",
                 "Give me a scribble drawing of the picture.", "turn it into a doodle", "make this look hand drawn",
                 "convert the photo to a pencil drawing", "give me a sketch version of the picture",
                 "scribble this photo", "draw this as a sketch", "make a scribble out of my photo",
                 "sketchify this image", "can you turn the picture into a hand-drawn sketch?",
                 "i want a pencil sketch version", "create a drawing of this photo", "make it look sketched",
                 "sketch it for me")

    def forward(self, image_path: Path) -> Image.Image:
        gray = cv2.cvtColor(np.array(Image.open(image_path).convert("RGB")), cv2.COLOR_RGB2GRAY)
        smooth = cv2.bilateralFilter(gray, 9, 75, 75)  # keeps object outlines, drops fine texture
        median = float(np.median(smooth))
        edges = cv2.Canny(smooth, int(max(0, 0.66 * median)), int(min(255, 1.33 * median)))
        strokes = cv2.dilate(edges, np.ones((3, 3), np.uint8))
        return Image.fromarray(np.stack([strokes] * 3, axis=2))
