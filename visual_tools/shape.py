"""Generate 3D Asset From User Input Text: Shap-E through diffusers, shown as four rendered views."""
from __future__ import annotations

from PIL import Image

from .base import Input
from .checkpoints import locate
from .diffusion import _Diffusion


class Text2Shape(_Diffusion):
    name = "Generate 3D Asset From User Input Text"
    description = ("useful when you want to generate a 3D asset or a 3D model of an object from a user input text "
                   "and save its rendered views to a file. like: generate a 3D model of a chair, or create a 3D "
                   "shape of a shark. The input to this tool should be a string, representing the text used to "
                   "generate the 3D asset. ")
    purpose = "make a 3D model from a text description; returns its rendered views"
    inputs = (Input("text", "text"),)
    output = "image_path"
    op = "shape"
    backend = "Shap-E through diffusers (four of its twenty rendered views)"
    checkpoints = ("openai/shap-e",)
    params_m = 430  # its text-conditional prior (300M) + CLIP ViT-L/14 text encoder (123M) + the renderer
    size, steps, guidance = 256, 64, 15.0  # Shap-E's own settings; `size` is the frame size
    phrasings = ("Generate a 3D model of {scene}.", "Make a 3D asset of {scene}.", "Create {scene} in 3D.",
                 "I need a 3D object: {scene}.", "Build a 3D shape of {scene}.")

    def setup(self) -> None:
        from diffusers import ShapEPipeline
        self.pipe = self._place(ShapEPipeline.from_pretrained(locate(self.checkpoint), dtype=self.dtype))

    def forward(self, text: str) -> Image.Image:
        frames = self.pipe(text, guidance_scale=self.guidance, num_inference_steps=self.steps,
                           frame_size=self.size, output_type="pil").images[0]
        views = [frames[i * len(frames) // 4] for i in range(4)]
        sheet = Image.new("RGB", (2 * self.size, 2 * self.size))
        for i, view in enumerate(views):
            sheet.paste(view.convert("RGB"), ((i % 2) * self.size, (i // 2) * self.size))
        return sheet
