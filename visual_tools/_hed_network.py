"""lllyasviel's ControlNetHED_Apache2 network (as in controlnet-aux, Apache License 2.0), with the same parameter
names so `lllyasviel/Annotators/ControlNetHED.pth` loads as is. Its own module (a leading "_": not scanned for tools)
so that listing the tools does not import torch."""
from __future__ import annotations

import torch
from torch import nn


class _Block(nn.Module):
    def __init__(self, channels_in: int, channels: int, layers: int):
        super().__init__()
        self.convs = nn.Sequential(*[nn.Conv2d(channels_in if i == 0 else channels, channels, 3, padding=1)
                                     for i in range(layers)])
        self.projection = nn.Conv2d(channels, 1, 1)

    def forward(self, x: torch.Tensor, down: bool) -> tuple[torch.Tensor, torch.Tensor]:
        h = nn.functional.max_pool2d(x, 2) if down else x
        for conv in self.convs:
            h = nn.functional.relu(conv(h))
        return h, self.projection(h)


class HedNetwork(nn.Module):
    """Five VGG-style stages; each stage's 1-channel projection is one edge scale."""

    def __init__(self):
        super().__init__()
        self.norm = nn.Parameter(torch.zeros(1, 3, 1, 1))
        for i, (cin, cout, layers) in enumerate([(3, 64, 2), (64, 128, 2), (128, 256, 3), (256, 512, 3),
                                                 (512, 512, 3)], start=1):
            self.add_module(f"block{i}", _Block(cin, cout, layers))

    def forward(self, rgb: torch.Tensor) -> list[torch.Tensor]:
        h, scales = rgb - self.norm, []
        for i in range(1, 6):
            h, projection = getattr(self, f"block{i}")(h, down=i > 1)
            scales.append(projection)
        return scales
