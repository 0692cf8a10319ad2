"""Segmentation On Image: UperNet semantic segmentation, coloured with ADE20K's palette (Visual ChatGPT's tool)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from .ade20k_palette import ADE20K_PALETTE
from .base import Input, Tool, inference_mode
from .checkpoints import locate


class Image2Seg(Tool):
    name = "Segmentation On Image"
    description = ("useful when you want to detect segmentations of the image. "
                   "like: segment this image, or generate segmentations on this image, "
                   "or peform segmentation on this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "a semantic segmentation map: each region coloured by its class (ADE20K)"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "segmentation-map"
    result = "the segmentation map"
    backend = "UperNet (ADE20K, 150 classes) through transformers"
    checkpoints = ("openmmlab/upernet-convnext-small",)
    params_m = 81
    phrasings = ("Give me a semantic segmentation of this image.", "Label every region of the picture by class.",
                 "Run semantic segmentation on this photo.", "Make a segmentation map of the scene.",
                 "Which regions of the image are which? Segment it.")

    def setup(self) -> None:
        from transformers import AutoImageProcessor, UperNetForSemanticSegmentation
        self.processor = AutoImageProcessor.from_pretrained(locate(self.checkpoint))
        self.model = UperNetForSemanticSegmentation.from_pretrained(
            locate(self.checkpoint), dtype=self.dtype).to(self.device).eval()

    @inference_mode
    def forward(self, image_path: Path) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        batch = self.processor(images=image, return_tensors="pt").to(self.device, self.dtype)
        classes = self.processor.post_process_semantic_segmentation(
            self.model(**batch), target_sizes=[image.size[::-1]])[0].cpu().numpy()
        palette = np.array(ADE20K_PALETTE, dtype=np.uint8)
        return Image.fromarray(palette[classes % len(palette)])
