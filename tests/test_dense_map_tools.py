"""Dense maps (depth, normals, segmentation, HED): tiny or random models, loaded by the tools' own code."""
from pathlib import Path

import numpy as np
from PIL import Image

from tiny_models import build_tiny_dpt, build_tiny_upernet
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


def test_segmentation_map_uses_the_ade20k_palette(tmp_path, store):
    from visual_tools.ade20k_palette import ADE20K_PALETTE
    from visual_tools.segmentation import Image2Seg
    tool = Image2Seg("cpu", str(build_tiny_upernet(tmp_path / "upernet")))
    name = store.save_upload(ASSETS / "chelsea.png")
    result = invoke(tool, name, store)
    pixels = np.array(Image.open(store.resolve(result.image)))
    assert f"_segmentation-map_{name[6:14]}_" in result.image and pixels.shape == (320, 512, 3)
    colours = {tuple(c) for c in pixels.reshape(-1, 3)}
    assert colours <= set(ADE20K_PALETTE) and len(ADE20K_PALETTE) == 150


def test_hed_loads_annotator_weights_and_maps_edges(store, tmp_path):
    import torch

    from visual_tools._hed_network import HedNetwork
    from visual_tools.hed import WEIGHTS, Image2Hed
    torch.manual_seed(0)
    torch.save(HedNetwork().state_dict(), tmp_path / WEIGHTS)  # the file layout of lllyasviel/Annotators
    tool = Image2Hed("cpu", str(tmp_path))
    assert tool.availability() == (True, "")
    name = store.save_upload(ASSETS / "chelsea.png")
    result = invoke(tool, name, store)
    hed = np.array(Image.open(store.resolve(result.image)))
    assert f"_hed-boundary_{name[6:14]}_" in result.image and hed.shape == (320, 512, 3)
    assert Image2Hed("cpu", str(tmp_path / "missing")).availability()[0] is False
    assert sum(p.numel() for p in HedNetwork().parameters()) > 14e6  # ControlNetHED's size
