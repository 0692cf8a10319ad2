"""Line Detection On Image: straight line segments, drawn white on black like M-LSD's map."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input, Tool


class Image2Line(Tool):
    name = "Line Detection On Image"
    description = ("useful when you want to detect the straight line of the image. "
                   "like: detect the straight lines of this image, or straight line detection on image, "
                   "or perform straight line detection on this image, or detect the straight line image of this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "only the straight line segments of an image, e.g. walls and buildings"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "line-of"
    result = "the line drawing of its straight lines"
    backend = "OpenCV LSD line segments (classical, in place of GPT4Tools' M-LSD)"
    min_length = 0.03  # of the image diagonal: shorter segments are texture, not lines
    phrasings = ("Detect the straight lines in this image.", "Find all straight line segments in the picture.",
                 "Show me the straight lines of the {object} and its surroundings.",
                 "Perform straight line detection on this photo.", "Draw the line segments found in the image.",
                 "find the straight edges like walls and poles", "mark only the ruler-straight lines",
                 "detect straight segments, not every edge", "show the line segments of the buildings",
                 "straight lines only please", "which lines in the photo are straight? draw them",
                 "highlight the straight lines in this photo", "detect the line segments",
                 "where are the straight lines?", "pick out the straight lines in this scene",
                 "line detection on this pic please", "show me only the straight lines, not the curves",
                 "i want the straight line segments of the photo", "find lines in this image",
                 "can you mark the straight lines of the picture?")

    def forward(self, image_path: Path) -> Image.Image:
        gray = cv2.cvtColor(np.array(Image.open(image_path).convert("RGB")), cv2.COLOR_RGB2GRAY)
        segments = cv2.createLineSegmentDetector().detect(gray)[0]
        canvas = np.zeros_like(gray)
        floor = self.min_length * float(np.hypot(*gray.shape))
        for x1, y1, x2, y2 in (segments.reshape(-1, 4) if segments is not None else []):
            if np.hypot(x2 - x1, y2 - y1) >= floor:
                cv2.line(canvas, (round(x1), round(y1)), (round(x2), round(y2)), 255, 1, cv2.LINE_AA)
        return Image.fromarray(np.stack([canvas] * 3, axis=2))
