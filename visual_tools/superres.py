"""Super Resolution On Image: a 2x classical upscale (Lanczos + unsharp mask), labelled as such."""
from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageFilter

from .base import Input, Tool


class SuperResolution(Tool):
    name = "Super Resolution On Image"
    description = ("useful when you want to enlarge the image or make it sharper and of higher resolution. "
                   "like: upscale this image, or increase the resolution of this image, or make this image clearer. "
                   "The input to this tool should be a string, representing the image_path")
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "upscale"
    backend = "classical 2x Lanczos upscale + unsharp mask (not a learned super-resolution model)"
    scale = 2

    def forward(self, image_path: Path) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        large = image.resize((image.width * self.scale, image.height * self.scale), Image.Resampling.LANCZOS)
        return large.filter(ImageFilter.UnsharpMask(radius=2, percent=80, threshold=2))
