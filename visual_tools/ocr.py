"""Text Detection On Image: OCR with the PP-OCRv4 models that ship inside rapidocr-onnxruntime 1.4.x."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from PIL import Image

from .base import Input, Tool


class TextDetection(Tool):
    name = "Text Detection On Image"
    description = ("useful when you want to detect the text in the image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "read the text written in an image (OCR)"
    inputs = (Input("image_path", "image_path"),)
    output = "text"
    package = ("rapidocr_onnxruntime", "rapidocr-onnxruntime==1.4.4")
    backend = "RapidOCR (PP-OCRv4 detection + recognition, ONNX Runtime)"
    phrasings = ("Read the text in this image.", "Is there any writing in the picture? Read it.",
                 "Detect the text on the photo.", "What does the text in the image say?", "Run OCR on this picture.",
                 "read the label for me", "what does the sign say?", "ocr please",
                 "copy out the words you see in the image", "what's written here?", "read the sign in this photo",
                 "extract the text from the picture", "any text in this image?", "tell me the words in the picture",
                 "recognize the text in my photo", "can you read this for me?", "what do the letters in the image say?",
                 "text detection please")

    def setup(self) -> None:
        from rapidocr_onnxruntime import RapidOCR
        self.engine = RapidOCR()

    def forward(self, image_path: Path) -> str:
        found, _ = self.engine(np.array(Image.open(image_path).convert("RGB"))[:, :, ::-1])  # BGR, as cv2
        if not found:
            return "No text found in the image."
        lines = []
        for corners, text, _score in found:
            xs, ys = [p[0] for p in corners], [p[1] for p in corners]
            lines.append(f'"{text}" at [{round(min(xs))}, {round(min(ys))}, {round(max(xs))}, {round(max(ys))}]')
        return f"Found {len(lines)} text line(s): " + "; ".join(lines)

    def report(self, observation: str, tool_input: str) -> str:
        lines = re.findall(r'"(.*?)" at \[', observation)
        return f'The image reads: "{" / ".join(lines)}"' if lines else observation

    def found(self, answer: str, observation: str) -> bool:
        lines = re.findall(r'"(.*?)" at \[', observation)
        return any(line.lower() in answer.lower() for line in lines) if lines else "no text" in answer.lower()
