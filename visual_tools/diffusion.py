"""Stable Diffusion tools through diffusers: Text2Image, InstructPix2Pix and the eight ControlNet tools.

Every ControlNet tool reuses the Text2Image tool's loaded components (one SD base in memory) and
adds only its ControlNet; checkpoints are GPT4Tools' choices on their current hub homes.
"""
from __future__ import annotations

import os
from pathlib import Path

from PIL import Image

from .base import Input, Tool
from .checkpoints import locate

A_PROMPT = "best quality, extremely detailed"  # GPT4Tools' added and negative prompts
N_PROMPT = ("longbody, lowres, bad anatomy, bad hands, missing fingers, extra digit, "
            "fewer digits, cropped, worst quality, low quality")
CONDITION_TEMPLATE = ("useful when you want to generate a new real image from both the user description and {what}. "
                      "like: generate a real image of a object or something from this {this}, "
                      "or generate a new real image of a object or something from {these}. "
                      "The input to this tool should be a comma separated string of two, "
                      "representing the image_path and the user description{end}")


def _conditioned(map_name: str, short: str) -> tuple[str, ...]:
    """A ControlNet tool's phrasings, by what people call its condition map: in full and for short."""
    return (f"Use the {map_name} of this image to generate {{scene}}.",
            f"Keep the {short} of this picture but make it {{scene}}.",
            f"Generate a new real image of {{scene}} from the {map_name} of the photo.",
            f"From this image's {short}, create {{scene}}.",
            f"Make {{scene}} that follows the {map_name} of this picture.")


def _fit(image: Image.Image, size: int) -> Image.Image:
    """Scale so the longer side is `size`, both sides multiples of 8 (what the UNet needs)."""
    ratio = size / max(image.size)
    return image.resize(tuple(max(8, round(s * ratio / 8) * 8) for s in image.size), Image.Resampling.LANCZOS)


class _Diffusion(Tool):
    size, steps, guidance = 512, 20, 9.0  # GPT4Tools' ControlNet settings; tests shrink them

    def _place(self, pipe):
        pipe.set_progress_bar_config(disable=True)
        if os.environ.get("TOOLSMITH_CPU_OFFLOAD") and self.device.startswith("cuda"):
            pipe.enable_model_cpu_offload()  # small GPUs: weights wait on the CPU between calls
            return pipe
        return pipe.to(self.device)


class Text2Image(_Diffusion):
    name = "Generate Image From User Input Text"
    description = ("useful when you want to generate an image from a user input text and save it to a file. "
                   "like: generate an image of an object or something, "
                   "or generate an image that includes some objects. "
                   "The input to this tool should be a string, representing the text used to generate image. ")
    purpose = "make a new image from a text description"
    inputs = (Input("text", "text"),)
    output = "image_path"
    op = "gen"
    backend = "Stable Diffusion 1.5 through diffusers"
    checkpoints = ("stable-diffusion-v1-5/stable-diffusion-v1-5",)
    params_m = 1066  # UNet 860M + CLIP text encoder 123M + VAE 84M
    steps, guidance = 50, 7.5
    phrasings = ("Generate an image of {scene}.", "Draw {scene} for me.", "Can you create a picture of {scene}?",
                 "Make an image showing {scene}.", "I want a new picture: {scene}.", "Paint {scene}.")

    def setup(self) -> None:
        from diffusers import StableDiffusionPipeline
        self.pipe = self._place(StableDiffusionPipeline.from_pretrained(
            locate(self.checkpoint), dtype=self.dtype, safety_checker=None, requires_safety_checker=False))

    def forward(self, text: str) -> Image.Image:
        return self.pipe(f"{text}, {A_PROMPT}", negative_prompt=N_PROMPT, height=self.size, width=self.size,
                         num_inference_steps=self.steps, guidance_scale=self.guidance).images[0]


class InstructPix2Pix(_Diffusion):
    name = "Instruct Image Using Text"
    description = ("useful when you want to the style of the image to be like the text. "
                   "like: make it look like a painting. or make it like a robot. "
                   "The input to this tool should be a comma separated string of two, "
                   "representing the image_path and the text. ")
    purpose = "edit an image by a written instruction, e.g. make it look like a painting"
    inputs = (Input("image_path", "image_path"), Input("text", "text"))
    output = "image_path"
    op = "pix2pix"
    backend = "Instruct-Pix2Pix through diffusers"
    checkpoints = ("timbrooks/instruct-pix2pix",)
    params_m = 1066  # UNet 860M + CLIP text encoder 123M + VAE 84M
    steps = 40
    phrasings = ("{style}", "Edit the photo: {style}", "Change the picture so that you {style_lower}",
                 "Restyle this image: {style}", "Please {style_lower}")
    arg_slots = {"text": "style"}

    def setup(self) -> None:
        from diffusers import EulerAncestralDiscreteScheduler, StableDiffusionInstructPix2PixPipeline
        pipe = StableDiffusionInstructPix2PixPipeline.from_pretrained(
            locate(self.checkpoint), dtype=self.dtype, safety_checker=None, requires_safety_checker=False)
        pipe.scheduler = EulerAncestralDiscreteScheduler.from_config(pipe.scheduler.config)
        self.pipe = self._place(pipe)

    def forward(self, image_path: Path, text: str) -> Image.Image:
        image = _fit(Image.open(image_path).convert("RGB"), self.size)
        return self.pipe(text, image=image, num_inference_steps=self.steps, image_guidance_scale=1.2).images[0]


class _ControlNet(_Diffusion):
    """A ControlNet on the shared Stable Diffusion base of the Text2Image tool."""
    inputs = (Input("image_path", "image_path"), Input("text", "text"))
    output = "image_path"
    requires = ("Text2Image",)
    backend = "ControlNet 1.1 on Stable Diffusion 1.5 through diffusers"
    params_m = 361  # the ControlNet alone: the SD base is the Text2Image tool's

    def setup(self) -> None:
        from diffusers import ControlNetModel, StableDiffusionControlNetPipeline, UniPCMultistepScheduler
        controlnet = ControlNetModel.from_pretrained(locate(self.checkpoint), dtype=self.dtype)
        pipe = StableDiffusionControlNetPipeline(**self.parts["Text2Image"].pipe.components, controlnet=controlnet)
        pipe.scheduler = UniPCMultistepScheduler.from_config(pipe.scheduler.config)
        self.pipe = self._place(pipe)

    def forward(self, image_path: Path, text: str) -> Image.Image:
        condition = _fit(Image.open(image_path).convert("RGB"), self.size)
        return self.pipe(f"{text}, {A_PROMPT}", condition, negative_prompt=N_PROMPT, num_inference_steps=self.steps,
                         guidance_scale=self.guidance, eta=0.0, height=condition.height,
                         width=condition.width).images[0]


class CannyText2Image(_ControlNet):
    name = "Generate Image Condition On Canny Image"
    description = CONDITION_TEMPLATE.format(what="a canny image", this="canny image", these="this edge image",
                                            end=". ")
    purpose = "make a new image from a Canny edge map and a description"
    op, checkpoints = "canny2image", ("lllyasviel/control_v11p_sd15_canny",)
    condition = "Image2Canny"
    phrasings = _conditioned("canny edge map", "edges")


class LineText2Image(_ControlNet):
    name = "Generate Image Condition On Line Image"
    description = CONDITION_TEMPLATE.format(what="a straight line image", this="straight line image",
                                            these="this straight lines", end=". ")
    purpose = "make a new image from a straight-line map and a description"
    op, checkpoints = "line2image", ("lllyasviel/control_v11p_sd15_mlsd",)
    condition = "Image2Line"
    phrasings = _conditioned("straight line map", "straight lines")


class HedText2Image(_ControlNet):
    name = "Generate Image Condition On Soft Hed Boundary Image"
    description = CONDITION_TEMPLATE.format(what="a soft hed boundary image", this="soft hed boundary image",
                                            these="this hed boundary", end="")
    purpose = "make a new image from a soft HED boundary map and a description"
    op, checkpoints = "hed2image", ("lllyasviel/control_v11p_sd15_softedge",)
    condition = "Image2Hed"
    phrasings = _conditioned("soft HED boundary map", "HED boundaries")


class ScribbleText2Image(_ControlNet):
    name = "Generate Image Condition On Sketch Image"
    description = ("useful when you want to generate a new real image from both the user description and "
                   "a scribble image or a sketch image. The input to this tool should be a comma separated string "
                   "of two, representing the image_path and the user description")
    purpose = "make a new image from a sketch or scribble and a description"
    op, checkpoints = "scribble2image", ("lllyasviel/control_v11p_sd15_scribble",)
    condition = "Image2Scribble"
    phrasings = _conditioned("sketch", "scribble")


class PoseText2Image(_ControlNet):
    name = "Generate Image Condition On Pose Image"
    description = ("useful when you want to generate a new real image from both the user description "
                   "and a human pose image. like: generate a real image of a human from this human pose image, "
                   "or generate a new real image of a human from this pose. The input to this tool should be a "
                   "comma separated string of two, representing the image_path and the user description")
    purpose = "make a new image of a person from a pose skeleton and a description"
    op, checkpoints = "pose2image", ("lllyasviel/control_v11p_sd15_openpose",)
    condition = "Image2Pose"
    phrasings = _conditioned("human pose", "pose skeleton")


class SegText2Image(_ControlNet):
    name = "Generate Image Condition On Segmentations"
    description = CONDITION_TEMPLATE.format(what="segmentations", this="segmentation image",
                                            these="these segmentations", end="")
    purpose = "make a new image from a segmentation map and a description"
    op, checkpoints = "segment2image", ("lllyasviel/control_v11p_sd15_seg",)
    condition = "Image2Seg"
    phrasings = _conditioned("segmentation map", "segmentations")


class DepthText2Image(_ControlNet):
    name = "Generate Image Condition On Depth"
    description = CONDITION_TEMPLATE.format(what="depth image", this="depth image", these="the depth map", end="")
    purpose = "make a new image from a depth map and a description"
    op, checkpoints = "depth2image", ("lllyasviel/control_v11f1p_sd15_depth",)
    condition = "Image2Depth"
    phrasings = _conditioned("depth map", "depth")


class NormalText2Image(_ControlNet):
    name = "Generate Image Condition On Normal Map"
    description = CONDITION_TEMPLATE.format(what="normal map", this="normal map", these="the normal map", end="")
    purpose = "make a new image from a normal map and a description"
    op, checkpoints = "normal2image", ("lllyasviel/control_v11p_sd15_normalbae",)
    condition = "Image2Normal"
    phrasings = _conditioned("normal map", "surface normals")

