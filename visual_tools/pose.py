"""Pose Detection On Image: MediaPipe Pose (the model in its wheel) drawn as an OpenPose skeleton.

The pose ControlNet (`control_v11p_sd15_openpose`) was trained on OpenPose's 18-keypoint rendering, so the
33 MediaPipe landmarks are mapped to those 18 keypoints and drawn with OpenPose's limbs and colours. The
drawing follows `controlnet_aux.open_pose.util.draw_bodypose` (Apache-2.0); it is written here because
controlnet-aux imports torchvision on import, which has no CPU build for torch 2.13.
"""
from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from .base import Input, Tool, ToolInputError

# OpenPose's keypoints in its order (nose, neck, right arm, left arm, right leg, left leg, eyes, ears) as
# the MediaPipe landmarks each is the mean of: one, or for the neck the two shoulders.
OPENPOSE_FROM_MEDIAPIPE: tuple[tuple[int, ...], ...] = (
    (0,), (11, 12), (12,), (14,), (16,), (11,), (13,), (15,), (24,), (26,), (28,), (23,), (25,), (27,), (5,), (2,),
    (8,), (7,))
LIMBS = ((1, 2), (1, 5), (2, 3), (3, 4), (5, 6), (6, 7), (1, 8), (8, 9), (9, 10), (1, 11), (11, 12), (12, 13),
         (1, 0), (0, 14), (14, 16), (0, 15), (15, 17))
COLORS = ((255, 0, 0), (255, 85, 0), (255, 170, 0), (255, 255, 0), (170, 255, 0), (85, 255, 0), (0, 255, 0),
          (0, 255, 85), (0, 255, 170), (0, 255, 255), (0, 170, 255), (0, 85, 255), (0, 0, 255), (85, 0, 255),
          (170, 0, 255), (255, 0, 255), (255, 0, 170), (255, 0, 85))
MIN_VISIBILITY = 0.5


def openpose_keypoints(landmarks, width: int, height: int) -> list[tuple[float, float] | None]:
    """The 18 OpenPose keypoints in pixels from MediaPipe's landmarks; None where a point is unseen or off-image."""
    def point(index: int) -> tuple[float, float] | None:
        mark = landmarks[index]
        inside = 0 <= mark.x <= 1 and 0 <= mark.y <= 1
        return (mark.x * width, mark.y * height) if inside and mark.visibility >= MIN_VISIBILITY else None

    keypoints = []
    for sources in OPENPOSE_FROM_MEDIAPIPE:
        points = [point(i) for i in sources]
        keypoints.append(None if None in points else tuple(float(v) for v in np.mean(points, axis=0)))
    return keypoints


def draw_openpose(keypoints: list[tuple[float, float] | None], width: int, height: int) -> np.ndarray:
    """OpenPose's rendering: limbs as ellipses at 60 % of their colour, then a disc on every keypoint."""
    canvas = np.zeros((height, width, 3), dtype=np.uint8)
    for (a, b), color in zip(LIMBS, COLORS):
        if keypoints[a] is None or keypoints[b] is None:
            continue
        (xa, ya), (xb, yb) = keypoints[a], keypoints[b]
        length = math.hypot(xa - xb, ya - yb)
        angle = math.degrees(math.atan2(ya - yb, xa - xb))
        polygon = cv2.ellipse2Poly((int((xa + xb) / 2), int((ya + yb) / 2)), (int(length / 2), 4), int(angle),
                                   0, 360, 1)
        cv2.fillConvexPoly(canvas, polygon, [int(c * 0.6) for c in color])
    for keypoint, color in zip(keypoints, COLORS):
        if keypoint is not None:
            cv2.circle(canvas, (int(keypoint[0]), int(keypoint[1])), 4, color, thickness=-1)
    return canvas


class Image2Pose(Tool):
    name = "Pose Detection On Image"
    description = ("useful when you want to detect the human pose of the image. "
                   "like: generate human poses of this image, or generate a pose image from this image. "
                   "The input to this tool should be a string, representing the image_path")
    purpose = "the human pose skeleton (body keypoints) of the people in an image"
    inputs = (Input("image_path", "image_path"),)
    output = "image_path"
    op = "human-pose"
    result = "the pose skeleton"
    package = ("mediapipe", "mediapipe==0.10.14")
    backend = "MediaPipe Pose, drawn as OpenPose's 18 keypoints (in place of GPT4Tools' OpenPose)"
    phrasings = ("Detect the human pose in this image.", "Show me the body keypoints of the person.",
                 "Estimate the pose of the {object} in the photo.", "Generate a pose skeleton from this picture.",
                 "Where are the person's joints? Draw the pose.", "draw the stick figure of the person",
                 "estimate the body pose", "what pose is the person in? show it", "detect the human skeleton",
                 "find the person's pose", "show me how the person is posed", "get the body skeleton of this person",
                 "mark the joints of the person", "detect keypoints of the human body",
                 "what's the posture of the person? draw it", "pose estimation please",
                 "show the skeleton of whoever is in the picture")

    def setup(self) -> None:
        import mediapipe as mp
        self.mp = mp.solutions

    def forward(self, image_path: Path) -> Image.Image:
        rgb = np.array(Image.open(image_path).convert("RGB"))
        with self.mp.pose.Pose(static_image_mode=True, model_complexity=1) as pose:
            found = pose.process(rgb).pose_landmarks
        if found is None:
            raise ToolInputError(f"no human pose found in image/{image_path.name}")
        height, width = rgb.shape[:2]
        return Image.fromarray(draw_openpose(openpose_keypoints(found.landmark, width, height), width, height))
