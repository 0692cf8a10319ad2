"""Depth and normal maps: a tiny DPT saved with save_pretrained, loaded by the tools' own code."""
from pathlib import Path

import numpy as np
from PIL import Image

from tiny_models import build_tiny_dpt
from visual_tools import ToolRegistry, invoke
from visual_tools.depth import Image2Depth, Image2Normal

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def test_depth_and_normal_share_one_model(tmp_path, store):
    registry = ToolRegistry([Image2Depth("cpu", str(build_tiny_dpt(tmp_path / "dpt"))), Image2Normal("cpu")])
    name = store.save_upload(ASSETS / "chelsea.png")  # 512x320 once stored
    depth = invoke(registry.get("Predict Depth On Image"), name, store)
    normal = invoke(registry.get("Predict Normal Map On Image"), name, store)
    for result, op in ((depth, "depth"), (normal, "normal-map")):
        assert f"_{op}_{name[6:14]}_" in result.image
        assert Image.open(store.resolve(result.image)).size == (512, 320)
    pixels = np.array(Image.open(store.resolve(normal.image)))
    assert pixels.shape == (320, 512, 3) and (pixels[:, :, 2] >= 127).all()  # normals face the camera
    assert registry.by_class("Image2Normal").parts["Image2Depth"] is registry.by_class("Image2Depth")


def test_normal_needs_depth():
    ok, reason = ToolRegistry.from_load("Image2Normal_cpu").by_class("Image2Normal").availability()
    assert not ok and "fetch Image2Depth" in reason
