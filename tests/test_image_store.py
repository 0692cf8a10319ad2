import re

import numpy as np
import pytest
from PIL import Image

from visual_tools import ImageInputError, ImageStore
from visual_tools.image_store import IMAGE_NAME


def test_upload_is_resized_like_gpt4tools(store, box_image):
    name = store.save_upload(box_image)
    assert re.fullmatch(r"image/[0-9a-f]{8}\.png", name)
    size = Image.open(store.resolve(name)).size
    assert size == (512, 384)  # 400x300 scaled to fit 512, sides rounded to multiples of 64


def test_huge_image_is_downscaled_not_crashed(store, tmp_path):
    path = tmp_path / "huge.png"
    Image.new("RGB", (12_000, 12_000), "white").save(path)
    name = store.save_upload(path)
    assert Image.open(store.resolve(name)).size == (512, 512)


@pytest.mark.parametrize("content", [b"not an image at all", b"\x89PNG\r\n\x1a\n" + b"\x00" * 50])
def test_bad_uploads_are_refused_clearly(store, tmp_path, content):
    path = tmp_path / "upload.png"
    path.write_bytes(content)
    with pytest.raises(ImageInputError, match="not a readable image"):
        store.save_upload(path)
    assert store.names() == []


def test_provenance_names_keep_parent_and_root(store, box_image):
    root = store.save_upload(box_image)
    first = store.save_output(Image.new("RGB", (8, 8)), "edge", root)
    second = store.save_output(Image.new("RGB", (8, 8)), "pose", first)
    r, f = root[6:14], first[6:14]
    assert re.fullmatch(rf"image/[0-9a-f]{{8}}_edge_{r}_{r}\.png", first)
    assert re.fullmatch(rf"image/[0-9a-f]{{8}}_pose_{f}_{r}\.png", second)
    assert all(IMAGE_NAME.fullmatch(n) for n in (root, first, second))
    assert store.save_output(Image.new("RGB", (8, 8)), "gen", None).count("_") == 0


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "image/../../../etc/passwd",
                                  "image/../secret.png", "", "image/nothere.png"])
def test_resolve_refuses_paths_outside_or_missing(store, name):
    with pytest.raises(ImageInputError):
        store.resolve(name)


def test_sessions_do_not_see_each_other(box_image):
    a, b = ImageStore.new_session(), ImageStore.new_session()
    name = a.save_upload(box_image)
    assert a.resolve(name).is_file()
    with pytest.raises(ImageInputError):
        b.resolve(name)
    a.delete(), b.delete()


def test_resolve_accepts_quoted_names(store):
    name = store.save_output(Image.fromarray(np.zeros((8, 8, 3), np.uint8)), "edge", None)
    assert store.resolve(f" '{name}' ") == store.resolve(name)


def test_an_image_beyond_the_pixel_limit_is_refused(store, tmp_path, monkeypatch):
    import visual_tools.image_store as image_store
    path = tmp_path / "big.png"
    Image.new("RGB", (2000, 2000)).save(path)
    monkeypatch.setattr(image_store, "MAX_PIXELS", 1_000_000)
    with pytest.raises(ImageInputError, match="image too large"):
        store.save_upload(path)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000_000)  # Pillow's own bomb check says the same
    with pytest.raises(ImageInputError, match="image too large"):
        store.save_upload(path)


def test_a_link_inside_the_session_to_a_file_outside_is_refused(store, box_image):
    (store.root / "image" / "1a2b3c4d.png").symlink_to(box_image)
    with pytest.raises(ImageInputError, match="outside this session"):
        store.resolve("image/1a2b3c4d.png")


def test_sweeper_deletes_old_sessions_then_the_least_recently_used_over_the_size_limit(tmp_path):
    import os
    import time

    from visual_tools.image_store import SessionSweeper
    now = time.time()
    ages = {"stale": 3 * 3600, "old": 600, "mid": 300, "new": 10}  # seconds since last use
    for name, age in ages.items():
        image = tmp_path / name / "image"
        image.mkdir(parents=True)
        (image / "1a2b3c4d.png").write_bytes(b"x" * 1000)
        for path in (image / "1a2b3c4d.png", image, tmp_path / name):
            os.utime(path, (now - age, now - age))
    sweep = SessionSweeper(max_age_s=3600, max_bytes=2500, interval_s=3600, keep_recent_s=60)
    assert sorted(p.name for p in sweep(tmp_path)) == ["old", "stale"]  # stale by age; then 3000 > 2500 bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mid", "new"]
    (tmp_path / "mid" / "image" / "big.png").write_bytes(b"x" * 5000)
    assert sweep(tmp_path) == []  # not due yet: at most once per interval
    assert sweep(tmp_path, force=True) == []  # over the limit, but both were used in the last minute
    lru_first = SessionSweeper(max_age_s=3600, max_bytes=2500, keep_recent_s=0)(tmp_path)
    assert lru_first == [tmp_path / "new", tmp_path / "mid"]  # 7000 bytes: the older goes first, 6000 still over
