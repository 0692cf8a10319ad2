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
    purpose = "upscale an image 2x and sharpen it"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "upscale"
    result = "the upscaled image"
    backend = "classical 2x Lanczos upscale + unsharp mask (not a learned super-resolution model)"
    scale = 2
    phrasings = ("Upscale this image.", "Make the picture sharper and bigger.",
                 "Increase the resolution of this photo.", "Enhance the image to a higher resolution.",
                 "The photo is too small; super-resolve it.", "enlarge this photo", "can you make the picture larger?",
                 "i want a higher resolution version", "upscale it 2x please",
                 "it's pixelated, can you make it bigger and sharper?", "make the image bigger without losing quality",
                 "super resolution please", "double the size of this photo", "enhance this low quality image",
                 "increase the pixels of this image", "make it bigger", "increase the image size", "upscale my photo",
                 "this is low-res, fix it", "can you improve the quality and size?", "sharpen and enlarge this picture",
                 "make a high resolution copy of this image", "blow this picture up to a larger size",
                 "the photo is too blurry and small, can you make it better?", "i need it at 2x resolution")

    def forward(self, image_path: Path) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        large = image.resize((image.width * self.scale, image.height * self.scale), Image.Resampling.LANCZOS)
        return large.filter(ImageFilter.UnsharpMask(radius=2, percent=80, threshold=2))
