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
import torch
from PIL import Image
from torch import nn

from .base import Input, Tool
from .checkpoints import locate

WEIGHTS = "ControlNetHED.pth"


class _Block(nn.Module):
    def __init__(self, channels_in: int, channels: int, layers: int):
        super().__init__()
        self.convs = nn.Sequential(*[nn.Conv2d(channels_in if i == 0 else channels, channels, 3, padding=1)
                                     for i in range(layers)])
        self.projection = nn.Conv2d(channels, 1, 1)

    def forward(self, x: torch.Tensor, down: bool) -> tuple[torch.Tensor, torch.Tensor]:
        h = nn.functional.max_pool2d(x, 2) if down else x
        for conv in self.convs:
            h = nn.functional.relu(conv(h))
        return h, self.projection(h)


class HedNetwork(nn.Module):
    """Five VGG-style stages; each stage's 1-channel projection is one edge scale."""

    def __init__(self):
        super().__init__()
        self.norm = nn.Parameter(torch.zeros(1, 3, 1, 1))
        for i, (cin, cout, layers) in enumerate([(3, 64, 2), (64, 128, 2), (128, 256, 3), (256, 512, 3),
                                                 (512, 512, 3)], start=1):
            self.add_module(f"block{i}", _Block(cin, cout, layers))

    def forward(self, rgb: torch.Tensor) -> list[torch.Tensor]:
        h, scales = rgb - self.norm, []
        for i in range(1, 6):
            h, projection = getattr(self, f"block{i}")(h, down=i > 1)
            scales.append(projection)
        return scales


class Image2Hed(Tool):
    name = "Hed Detection On Image"
    description = ("useful when you want to detect the soft hed boundary of the image. "
                   "like: detect the soft hed boundary of this image, or hed boundary detection on image, "
                   "or perform hed boundary detection on this image, or detect soft hed boundary image of this image. "
                   "The input to this tool should be a string, representing the image_path")
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "hed-boundary"
    backend = "ControlNet's Apache-2.0 HED network (lllyasviel/Annotators)"
    checkpoints = ("lllyasviel/Annotators",)
    checkpoint_files = (WEIGHTS,)
    params_m = 14.7
    phrasings = ("Detect the soft HED boundaries of this image.", "Run HED boundary detection on the picture.",
                 "Show me the soft edges of this photo.", "Give me the HED boundary map of the {object} picture.",
                 "Extract soft boundaries from the image.")

    def setup(self) -> None:
        self.network = HedNetwork()
        state = torch.load(Path(locate(self.checkpoint, WEIGHTS)) / WEIGHTS, map_location="cpu", weights_only=True)
        self.network.load_state_dict(state)
        self.network.to(self.device, self.dtype).eval()

    @torch.inference_mode()
    def forward(self, image_path: Path) -> Image.Image:
        rgb = np.array(Image.open(image_path).convert("RGB"))
        h, w = rgb.shape[:2]
        pixels = torch.from_numpy(rgb).float().permute(2, 0, 1)[None].to(self.device, self.dtype)  # 0..255, RGB
        scales = [cv2.resize(s[0, 0].float().cpu().numpy(), (w, h), interpolation=cv2.INTER_LINEAR)
                  for s in self.network(pixels)]
        edge = 1 / (1 + np.exp(-np.mean(scales, axis=0).astype(np.float64)))
        edge = (edge * 255.0).clip(0, 255).astype(np.uint8)
        return Image.fromarray(np.stack([edge] * 3, axis=2))
