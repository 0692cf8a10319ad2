"""Pose Detection On Image: a human skeleton on black, from the MediaPipe Pose model in its wheel."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from .base import Input, Tool, ToolInputError


class Image2Pose(Tool):
    name = "Pose Detection On Image"
    description = ("useful when you want to detect the human pose of the image. "
                   "like: generate human poses of this image, or generate a pose image from this image. "
                   "The input to this tool should be a string, representing the image_path")
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "human-pose"
    package = ("mediapipe", "mediapipe==0.10.14")
    backend = "MediaPipe Pose, 33 landmarks (in place of GPT4Tools' OpenPose)"

    def setup(self) -> None:
        import mediapipe as mp
        self.mp = mp.solutions

    def forward(self, image_path: Path) -> Image.Image:
        rgb = np.array(Image.open(image_path).convert("RGB"))
        with self.mp.pose.Pose(static_image_mode=True, model_complexity=1) as pose:
            found = pose.process(rgb).pose_landmarks
        if found is None:
            raise ToolInputError(f"no human pose found in image/{image_path.name}")
        canvas = np.zeros_like(rgb)
        style = self.mp.drawing_utils.DrawingSpec
        self.mp.drawing_utils.draw_landmarks(
            canvas, found, self.mp.pose.POSE_CONNECTIONS,
            landmark_drawing_spec=style(color=(255, 0, 0), thickness=4, circle_radius=3),
            connection_drawing_spec=style(color=(255, 255, 255), thickness=3))
        return Image.fromarray(canvas)
