"""Face Detection On Image: faces boxed on the photo, with OpenCV's bundled Haar cascade."""
from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw

from .base import Input, Tool


@functools.cache
def _cascade() -> cv2.CascadeClassifier:
    return cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")


def detect_faces(rgb: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Frontal faces as (x1, y1, x2, y2) boxes."""
    gray = cv2.equalizeHist(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
    side = max(24, min(gray.shape) // 12)
    found = _cascade().detectMultiScale(gray, scaleFactor=1.2, minNeighbors=5, minSize=(side, side))
    return [(int(x), int(y), int(x + w), int(y + h)) for x, y, w, h in found]


class FaceDetection(Tool):
    name = "Face Detection On Image"
    description = ("useful when you want to detect or find the human faces in the image. "
                   "like: detect the faces in this image, or find all faces of this photo. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "box the human faces in an image"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "face"
    result = "the image with the faces boxed"
    backend = "OpenCV Haar cascade, frontal faces (classical)"
    phrasings = ("Find the faces in this photo.", "Detect every human face in the picture.",
                 "Are there any faces here? Mark them.", "Draw boxes around the faces in the image.",
                 "Locate the people's faces in this picture.", "who's in the picture? box their faces",
                 "find every face", "outline the faces of the people", "are there people's faces in this photo?",
                 "find faces", "detect the face in this picture", "how many people's faces can you find?",
                 "box the faces", "mark any faces in the photo", "face detection please",
                 "is there a face in this picture? show me", "can you spot the faces here?")

    def forward(self, image_path: Path) -> tuple[Image.Image, str]:
        image = Image.open(image_path).convert("RGB")
        draw = ImageDraw.Draw(image)
        boxes = detect_faces(np.array(image))
        for box in boxes:
            draw.rectangle(box, outline=(255, 64, 64), width=3)
        return image, f"{len(boxes)} face{'' if len(boxes) == 1 else 's'} found"
