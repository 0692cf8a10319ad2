"""Segment the Image: Segment Anything through transformers, prompted by a grid of points.

transformers' mask-generation pipeline needs torchvision (for NMS), which has no wheel matching this
torch here; the grid prompting is a few lines, and OpenCV's NMSBoxes removes the duplicates.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input, Tool, ToolInputError, inference_mode
from .checkpoints import locate


def overlay(image: Image.Image, masks: list[np.ndarray], seed: int = 0) -> Image.Image:
    """The photo with each mask tinted in its own colour (largest first, so small ones stay visible)."""
    pixels = np.array(image.convert("RGB")).astype(np.float32)
    colours = np.random.default_rng(seed).integers(40, 255, size=(len(masks), 3))
    for mask, colour in sorted(zip(masks, colours), key=lambda mc: -mc[0].sum()):
        pixels[mask] = 0.45 * pixels[mask] + 0.55 * colour
    return Image.fromarray(pixels.astype(np.uint8))


class Segmenting(Tool):
    name = "Segment the Image"
    description = ("useful when you want to segment all the part of the image, but not segment a certain object."
                   "like: segment all the object in this image, or generate segmentations on this image, "
                   "or segment the image,"
                   "or perform segmentation on this image, "
                   "or segment all the object in this image."
                   "The input to this tool should be a string, representing the image_path")
    purpose = "mask every part of an image (Segment Anything), unlabelled; nothing named"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "segment-image"
    result = "the segmentation"
    backend = "Segment Anything (SAM) through transformers, point-grid prompts"
    checkpoints = ("facebook/sam-vit-huge",)
    params_m = 641
    points_per_side, batch, min_iou, nms_iou = 16, 64, 0.88, 0.7  # SAM's automatic-mask defaults, coarser grid
    phrasings = ("Segment everything in this image.", "Segment all the objects in the picture.",
                 "Perform segmentation on this photo.", "Split the image into its parts.",
                 "Generate segmentations for the whole picture.")

    def setup(self) -> None:
        from transformers import SamModel, SamProcessor
        self.processor = SamProcessor.from_pretrained(locate(self.checkpoint))
        self.model = SamModel.from_pretrained(locate(self.checkpoint), dtype=self.dtype).to(self.device).eval()

    @inference_mode
    def _masks(self, image: Image.Image, prompts: dict) -> tuple[np.ndarray, np.ndarray]:
        """Masks (n, H, W) and their predicted IoU for the prompts, one best mask per prompt."""
        embeddings = self.model.get_image_embeddings(
            self.processor(image, return_tensors="pt")["pixel_values"].to(self.device, self.dtype))
        batch = self.processor(image, return_tensors="pt", **prompts).to(self.device, self.dtype)
        out = self.model(image_embeddings=embeddings, multimask_output=False,
                         **{k: v for k, v in batch.items() if k.startswith("input_")})
        masks = self.processor.image_processor.post_process_masks(
            out.pred_masks.float().cpu(), batch["original_sizes"].cpu(), batch["reshaped_input_sizes"].cpu())[0]
        return masks[:, 0].numpy(), out.iou_scores[0, :, 0].float().cpu().numpy()

    def masks_for_boxes(self, image: Image.Image, boxes: list[list[float]]) -> list[np.ndarray]:
        """One mask per (x1, y1, x2, y2) box: what the detect-then-segment tools need."""
        return list(self._masks(image, {"input_boxes": [boxes]})[0])

    def segment_everything(self, image: Image.Image) -> list[np.ndarray]:
        w, h = image.size
        steps = (np.arange(self.points_per_side) + 0.5) / self.points_per_side
        grid = [[[float(x * w), float(y * h)]] for y in steps for x in steps]
        masks, scores = [], []
        for start in range(0, len(grid), self.batch):
            m, s = self._masks(image, {"input_points": [grid[start:start + self.batch]]})
            masks += list(m)
            scores += list(s)
        kept = [(m, s) for m, s in zip(masks, scores) if s >= self.min_iou and m.any()]
        if not kept:
            return []
        boxes = [cv2.boundingRect(m.astype(np.uint8)) for m, _ in kept]
        order = cv2.dnn.NMSBoxes(boxes, [float(s) for _, s in kept], 0.0, self.nms_iou)
        return [kept[i][0] for i in np.array(order).reshape(-1)]

    def forward(self, image_path: Path) -> Image.Image:
        image = Image.open(image_path).convert("RGB")
        masks = self.segment_everything(image)
        if not masks:
            raise ToolInputError(f"SAM found no confident segment in image/{image_path.name}")
        return overlay(image, masks)
