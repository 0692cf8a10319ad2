"""Open-vocabulary detection (Grounding DINO through transformers) and detect-then-segment with SAM."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from .base import Input, Tool, ToolInputError, inference_mode
from .checkpoints import locate
from .sam import overlay


def draw_boxes(image: Image.Image, found: list[tuple[list[float], str, float]]) -> Image.Image:
    """Boxes with their phrase and score, as GPT4Tools draws detections."""
    draw = ImageDraw.Draw(image)
    for (x1, y1, x2, y2), label, score in found:
        draw.rectangle((x1, y1, x2, y2), outline=(255, 64, 64), width=4)
        draw.text((x1 + 4, y1 + 2), f"{label}({score:.2f})", fill=(255, 255, 255))
    return image


class Text2Box(Tool):
    name = "Detect the Give Object"  # sic: GPT4Tools' name, kept byte-exact
    description = ("useful when you only want to detect or find out given objects in the picture"
                   "The input to this tool should be a comma separated string of two, "
                   "representing the image_path, the text description of the object to be found")
    purpose = "find and box only the named object in an image"
    inputs = (Input("image_path", "image_path"), Input("object", "text"))
    output = "image_path"
    op = "detect-something"
    backend = "Grounding DINO through transformers"
    checkpoints = ("IDEA-Research/grounding-dino-tiny",)  # Swin-T OGC, GPT4Tools' choice
    params_m = 172
    box_threshold, text_threshold = 0.3, 0.25  # GPT4Tools' thresholds
    phrasings = ("Detect the {object} in the picture.", "Where is the {object}? Draw a box around it.",
                 "Find the {object} in this image.", "Locate the {object} for me.",
                 "Can you show me where the {object} is?")

    def setup(self) -> None:
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
        self.processor = AutoProcessor.from_pretrained(locate(self.checkpoint))
        self.model = AutoModelForZeroShotObjectDetection.from_pretrained(
            locate(self.checkpoint), dtype=self.dtype).to(self.device).eval()

    @inference_mode
    def detect(self, image: Image.Image, text: str) -> list[tuple[list[float], str, float]]:
        """(box [x1, y1, x2, y2] in pixels, phrase, score) for each detection of `text`."""
        prompt = text.lower().strip()
        prompt = prompt if prompt.endswith(".") else prompt + "."
        batch = self.processor(images=image, text=prompt, return_tensors="pt").to(self.device, self.dtype)
        out = self.model(**batch)
        found = self.processor.post_process_grounded_object_detection(
            out, batch["input_ids"], threshold=self.box_threshold, text_threshold=self.text_threshold,
            target_sizes=[image.size[::-1]])[0]
        labels = found["text_labels"] if "text_labels" in found else found["labels"]
        return [(box.tolist(), str(label), float(score))
                for box, label, score in zip(found["boxes"], labels, found["scores"])]

    def forward(self, image_path: Path, object: str) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        found = self.detect(image, object)
        if not found:
            raise ToolInputError(f"no '{object}' detected in image/{image_path.name}")
        return draw_boxes(image, found)


COCO_CLASSES = (
    "person, bicycle, car, motorcycle, airplane, bus, train, truck, boat, traffic light, fire hydrant, stop sign, "
    "parking meter, bench, bird, cat, dog, horse, sheep, cow, elephant, bear, zebra, giraffe, backpack, umbrella, "
    "handbag, tie, suitcase, frisbee, skis, snowboard, sports ball, kite, baseball bat, baseball glove, skateboard, "
    "surfboard, tennis racket, bottle, wine glass, cup, fork, knife, spoon, bowl, banana, apple, sandwich, orange, "
    "broccoli, carrot, hot dog, pizza, donut, cake, chair, couch, potted plant, bed, dining table, toilet, tv, "
    "laptop, mouse, remote, keyboard, cell phone, microwave, oven, toaster, sink, refrigerator, book, clock, vase, "
    "scissors, teddy bear, hair drier, toothbrush").split(", ")


class Detection(Tool):
    name = "Detection"
    description = ("useful when you want to detect all objects of the image, but not detect a certain object "
                   "according to the text. like: detect all the objects in this image, or detect this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "box every common object (80 COCO classes) in an image; nothing named"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "detect-all"
    backend = "Grounding DINO (the detection tool's model) prompted with the 80 COCO classes"
    requires = ("Text2Box",)
    phrasings = ("Detect all the objects in this image.", "What objects are in the picture? Box them.",
                 "Find every object in the photo.", "Run object detection on this image.",
                 "Mark all the things you can detect in the picture.")

    def forward(self, image_path: Path) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        detector = self.parts["Text2Box"]
        found = [hit for query in self.queries(detector) for hit in detector.detect(image, query)]
        if not found:
            raise ToolInputError(f"no objects detected in image/{image_path.name}")
        return draw_boxes(image, found)


    @staticmethod
    def queries(detector: Text2Box) -> list[str]:
        """The class names joined into as few prompts as fit the model's text length."""
        limit, queries, current = detector.model.config.max_text_len, [], []
        for name in COCO_CLASSES:
            candidate = " . ".join([*current, name]) + " ."
            if current and len(detector.processor.tokenizer(candidate)["input_ids"]) > limit:
                queries.append(" . ".join(current))
                current = []
            current.append(name)
        return queries + [" . ".join(current)]


class ObjectSegmenting(Tool):
    name = "Segment the given object"
    description = ("useful when you only want to segment the certain objects in the picture"
                   "according to the given text"
                   "like: segment the cat,"
                   "or can you segment an obeject for me"
                   "The input to this tool should be a comma separated string of two, "
                   "representing the image_path, the text description of the object to be found")
    purpose = "mask the pixels of only the named object in an image"
    inputs = (Input("image_path", "image_path"), Input("object", "text"))
    output = "image_path"
    op = "segmentation"
    backend = "Grounding DINO boxes -> SAM masks (the two loaded tools)"
    requires = ("Text2Box", "Segmenting")
    phrasings = ("Segment the {object} in the image.", "Cut out the {object} with a mask.",
                 "Give me a segmentation mask of the {object}.", "Separate the {object} from the rest.",
                 "Highlight only the {object} by segmenting it.")

    def object_masks(self, image: Image.Image, text: str, source: str) -> list[np.ndarray]:
        found = self.parts["Text2Box"].detect(image, text)
        if not found:
            raise ToolInputError(f"no '{text}' detected in {source}")
        return self.parts["Segmenting"].masks_for_boxes(image, [box for box, _, _ in found])

    def forward(self, image_path: Path, object: str) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        return overlay(image, self.object_masks(image, object, f"image/{image_path.name}"))
