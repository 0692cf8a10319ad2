"""Hed Detection On Image: soft HED boundaries with ControlNet's Apache-2.0 HED network.

The network is lllyasviel's ControlNetHED_Apache2 (as in controlnet-aux, Apache License 2.0), written
here with the same parameter names so `lllyasviel/Annotators/ControlNetHED.pth` loads as is: importing
controlnet-aux pulls every annotator and with them torchvision and timm, which have no wheels matching
this project's torch.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input, Tool, inference_mode
from .checkpoints import locate

WEIGHTS = "ControlNetHED.pth"


class Image2Hed(Tool):
    name = "Hed Detection On Image"
    description = ("useful when you want to detect the soft hed boundary of the image. "
                   "like: detect the soft hed boundary of this image, or hed boundary detection on image, "
                   "or perform hed boundary detection on this image, or detect soft hed boundary image of this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "the soft HED boundary map of an image: smooth object outlines, little texture"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "hed-boundary"
    result = "the soft boundary map"
    backend = "ControlNet's Apache-2.0 HED network (lllyasviel/Annotators)"
    checkpoints = ("lllyasviel/Annotators",)
    checkpoint_files = (WEIGHTS,)
    params_m = 14.7
    phrasings = ("Detect the soft HED boundaries of this image.", "Run HED boundary detection on the picture.",
                 "Show me the soft edges of this photo.", "Give me the HED boundary map of the {object} picture.",
                 "Extract soft boundaries from the image.")

    def setup(self) -> None:
        import torch

        from ._hed_network import HedNetwork
        self.network = HedNetwork()
        state = torch.load(Path(locate(self.checkpoint, WEIGHTS)) / WEIGHTS, map_location="cpu", weights_only=True)
        self.network.load_state_dict(state)
        self.network.to(self.device, self.dtype).eval()

    @inference_mode
    def forward(self, image_path: Path) -> Image.Image:
        import torch
        rgb = np.array(Image.open(image_path).convert("RGB"))
        h, w = rgb.shape[:2]
        pixels = torch.from_numpy(rgb).float().permute(2, 0, 1)[None].to(self.device, self.dtype)  # 0..255, RGB
        scales = [cv2.resize(s[0, 0].float().cpu().numpy(), (w, h), interpolation=cv2.INTER_LINEAR)
                  for s in self.network(pixels)]
        edge = 1 / (1 + np.exp(-np.mean(scales, axis=0).astype(np.float64)))
        edge = (edge * 255.0).clip(0, 255).astype(np.uint8)
        return Image.fromarray(np.stack([edge] * 3, axis=2))
