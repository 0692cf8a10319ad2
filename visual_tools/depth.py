"""Predict Depth On Image (DPT through transformers) and Predict Normal Map On Image (its depth + Sobel)."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input, Tool
from .checkpoints import locate


class Image2Depth(Tool):
    name = "Predict Depth On Image"
    description = ("useful when you want to detect depth of the image. like: generate the depth from this image, "
                   "or detect the depth map on this image, or predict the depth for this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "the depth map of an image: how far away each part is"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "depth"
    result = "the depth map"
    backend = "DPT depth estimation through transformers"
    checkpoints = ("Intel/dpt-large",)  # the depth-estimation pipeline's default, as GPT4Tools uses it
    params_m = 343
    phrasings = ("Predict the depth of this image.", "Estimate a depth map for the picture.",
                 "How far away is everything? Show me the depth.", "Generate the depth map of this photo.",
                 "Detect the depth of the {object} and its surroundings.")

    def setup(self) -> None:
        from transformers import pipeline
        self.estimator = pipeline("depth-estimation", model=locate(self.checkpoint), device=self.device,
                                  dtype=self.dtype)

    def predict(self, image: Image.Image) -> np.ndarray:
        """Relative inverse depth (larger is nearer), one float per pixel of `image`."""
        depth = self.estimator(image)["predicted_depth"]
        return depth.squeeze().float().cpu().numpy()

    def forward(self, image_path: Path) -> Image.Image:
        depth = np.array(self.estimator(Image.open(image_path).convert("RGB"))["depth"])
        return Image.fromarray(np.stack([depth] * 3, axis=2))


class Image2Normal(Tool):
    name = "Predict Normal Map On Image"
    description = ("useful when you want to detect norm map of the image. "
                   "like: generate normal map from this image, or predict normal map of this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "the surface-normal map of an image, computed from its depth"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "normal-map"
    result = "the normal map"
    backend = "DPT depth (the depth tool's model) + Sobel gradients, as GPT4Tools computes it"
    requires = ("Image2Depth",)
    background = 0.4  # normalised depth below this is background (flat normal)
    phrasings = ("Predict the normal map of this image.", "Estimate surface normals for the picture.",
                 "Generate a normal map from this photo.", "Show me the normals of the {object} scene.",
                 "Compute the normal map of this image.")

    def forward(self, image_path: Path) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        depth = self.parts["Image2Depth"].predict(image)
        scaled = (depth - depth.min()) / max(float(np.ptp(depth)), 1e-6)
        x = cv2.Sobel(depth, cv2.CV_32F, 1, 0, ksize=3)
        y = cv2.Sobel(depth, cv2.CV_32F, 0, 1, ksize=3)
        x[scaled < self.background] = 0
        y[scaled < self.background] = 0
        normal = np.stack([x, y, np.full_like(x, np.pi * 2.0)], axis=2)
        normal /= np.sum(normal ** 2.0, axis=2, keepdims=True) ** 0.5
        normal = (normal * 127.5 + 127.5).clip(0, 255).astype(np.uint8)
        return Image.fromarray(normal).resize(image.size)
