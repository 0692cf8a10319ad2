"""Edge Detection On Image: OpenCV Canny, exactly GPT4Tools' thresholds (100, 200)."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input, Tool


class Image2Canny(Tool):
    name = "Edge Detection On Image"
    description = ("useful when you want to detect the edge of the image. "
                   "like: detect the edges of this image, or canny detection on image, "
                   "or perform edge detection on this image, or detect the canny image of this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "the edge map (Canny) of an image: every fine edge"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "edge"
    result = "the edge map"
    backend = "OpenCV Canny (thresholds 100, 200, as GPT4Tools)"
    low_threshold, high_threshold = 100, 200
    phrasings = ("Detect the edges of this image.", "Run canny edge detection on the picture.",
                 "Show me the outlines in this photo as an edge map.", "Can you find the edges of the {object}?",
                 "Extract a canny edge image from the picture.", "I need the edge map of this photo.",
                 "draw just the outlines of the things in the photo", "edge detection, please",
                 "give me an outline version of this photo", "where are the contours? draw them",
                 "draw the borders between the objects", "make a black and white edge map",
                 "outline the shapes in this photo", "edges please", "can you do edge detection on my photo?",
                 "show me where the edges are", "make an edge map out of this pic",
                 "find the object boundaries in the image", "run canny on it", "get me the outlines of this picture",
                 "i need an edge image of this", "highlight the edges in the photo",
                 "could you extract the contours of the image?")

    def forward(self, image_path: Path) -> Image.Image:
        rgb = np.array(Image.open(image_path).convert("RGB"))
        edges = cv2.Canny(rgb, self.low_threshold, self.high_threshold)
        return Image.fromarray(np.stack([edges] * 3, axis=2))
