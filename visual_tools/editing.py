"""Remove / Replace Something From The Photo: detect -> segment -> Stable Diffusion inpainting."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input
from .checkpoints import locate
from .diffusion import _Diffusion


class ReplaceSomething(_Diffusion):
    name = "Replace Something From The Photo"
    description = ("useful when you want to replace an object from the object description or "
                   "location with another object from its description. "
                   "The input to this tool should be a comma separated string of three, "
                   "representing the image_path, the object to be replaced, the object to be replaced with ")
    purpose = "swap an object, found by its description, for a described new one"
    inputs = (Input("image_path", "image_path"), Input("object", "text"), Input("new_object", "text"))
    output = "image_path"
    op = "replace-something"
    backend = "Grounding DINO -> SAM -> Stable Diffusion inpainting"
    checkpoints = ("stable-diffusion-v1-5/stable-diffusion-inpainting",)
    params_m = 1066  # UNet 860M + CLIP text encoder 123M + VAE 84M
    requires = ("ObjectSegmenting",)
    padding = 20  # GPT4Tools grows the mask by 20 px so the inpainting blends in
    phrasings = ("Replace the {object} with {new}.", "Swap the {object} for {new}.",
                 "Change the {object} in the picture into {new}.", "Put {new} where the {object} is.",
                 "Turn the {object} into {new}.")

    def setup(self) -> None:
        from diffusers import StableDiffusionInpaintPipeline
        self.pipe = self._place(StableDiffusionInpaintPipeline.from_pretrained(
            locate(self.checkpoint), dtype=self.dtype, safety_checker=None, requires_safety_checker=False))

    def forward(self, image_path: Path, object: str, new_object: str) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        masks = self.parts["ObjectSegmenting"].object_masks(image, object, f"image/{image_path.name}")
        mask = np.any(masks, axis=0).astype(np.uint8) * 255
        mask = cv2.dilate(mask, np.ones((2 * self.padding + 1, 2 * self.padding + 1), np.uint8))
        side = (self.size, self.size)
        edited = self.pipe(prompt=new_object, image=image.resize(side), mask_image=Image.fromarray(mask).resize(side),
                           height=self.size, width=self.size).images[0]
        return edited.resize(image.size)


class RemoveSomething(_Diffusion):
    name = "Remove Something From The Photo"
    description = ("useful when you want to remove and object or something from the photo "
                   "from its description or location. "
                   "The input to this tool should be a comma separated string of two, "
                   "representing the image_path and the object need to be removed. ")
    purpose = "erase an object, found by its description, and fill in the background"
    inputs = (Input("image_path", "image_path"), Input("object", "text"))
    output = "image_path"
    op = "remove-something"
    backend = "Replace Something From The Photo, with 'background' (as GPT4Tools does)"
    requires = ("ReplaceSomething",)
    phrasings = ("Remove the {object} from the photo.", "Erase the {object} from the picture.",
                 "Get rid of the {object} in this image.", "Make the {object} disappear.",
                 "Can you delete the {object} from the image?")

    def forward(self, image_path: Path, object: str) -> Image.Image:
        return self.parts["ReplaceSomething"].forward(image_path, object, "background")
