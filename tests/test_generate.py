"""Self-instruct generation: teachers, reply parsing, resumable runs, filtering and augmentation."""
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from conftest import free_port
from training.data.augment import augment, split_by_tool
from training.data.filters import filter_records
from training.data.generate import build_dataset, generate, generation_prompt, parse_reply
from training.data.records import GoldStep, load_jsonl
from training.data.teachers import Annotation, LLMTeacher, TeacherFailed, TeacherRequest, TemplateTeacher, load_teacher
from visual_tools import TOOL_CLASSES, VISUAL_TOOL_CLASSES, ToolRegistry

ASSETS = Path(__file__).resolve().parent.parent / "assets"
REGISTRY = ToolRegistry.from_load("Image2Canny_cpu,CropImage_cpu,VisualQuestionAnswering_cpu,CannyText2Image_cpu,"
                                  "ReplaceSomething_cpu,Text2Image_cpu")


@pytest.fixture
def images(tmp_path) -> Path:
    """Two photos with their annotations, plus files that are not images."""
    folder = tmp_path / "images"
    folder.mkdir()
    for name in ("chelsea.png", "coffee.png", "annotations.json"):
        shutil.copy(ASSETS / name, folder / name)
    (folder / "notes.txt").write_text("not an image")
    (folder / "broken.png").write_bytes(b"\x89PNG but not really")
    return folder


def test_every_tool_has_template_phrasings_and_the_prompt_lists_the_registry():
    phrased = {name for name, cls in TOOL_CLASSES.items() if cls.phrasings}
    assert phrased == set(VISUAL_TOOL_CLASSES) | {"Calculator", "Calendar", "WikiSearch"}  # + the chat's
    prompt = generation_prompt(Annotation("a cat", {"cat": [1, 2, 3, 4]}), REGISTRY.all(), 12)
    assert 'Image caption: "a cat. Objects: cat [1, 2, 3, 4]"' in prompt
    assert f"Below are {len(REGISTRY.tools)} visual tools" in prompt and "generate 12 visual instructions" in prompt
    for i, tool in enumerate(REGISTRY.all(), 1):
        assert f"{i}. {tool.name}: {tool.description}" in prompt


def test_reply_parsing_counts_lines_not_in_the_format():
    reply = """1. Crop the cat's face, [Crop Image, example.jpg, [90, 10, 330, 260]]
2. What colour is the cup?, [Answer Question About The Image, example.jpg, What colour is the cup?]
3. Replace the cup with a teapot, [Replace Something From The Photo, example.jpg, cup, a red, shiny teapot]
4. Paint me a picture of the sea
5. Do magic, [Make Magic Happen, example.jpg]
6. Find edges, [Edge Detection On Image]"""
    candidates, bad = parse_reply(reply, REGISTRY)
    assert bad == 3
    assert [(c.tool.name, c.args) for c in candidates] == [
        ("Crop Image", ["example.jpg", "[90, 10, 330, 260]"]),
        ("Answer Question About The Image", ["example.jpg", "What colour is the cup?"]),
        ("Replace Something From The Photo", ["example.jpg", "cup", "a red, shiny teapot"])]
    assert candidates[0].instruction == "Crop the cat's face"


class CountingTeacher(TemplateTeacher):
    def __init__(self):
        self.calls = 0

    def instruct(self, request: TeacherRequest) -> str:
        self.calls += 1
        return super().instruct(request)


def test_template_generation_is_valid_varied_and_resumable(images, tmp_path):
    teacher = CountingTeacher()
    raw = tmp_path / "raw.jsonl"
    report = generate(images, teacher, REGISTRY, raw, n=24, per_call=12)
    assert report.images == 2 and sorted(s.split(":")[0] for s in report.skipped_files) == ["broken.png",
                                                                                          "notes.txt"]
    assert teacher.calls == 2 and report.records == 24 and report.lines_unparsed == 0
    records = load_jsonl(raw).records
    kept, dropped = filter_records(records, REGISTRY)
    assert len(kept) >= 20, dropped  # the template phrasings are varied enough to survive ROUGE-L
    assert {t for r in records for t in r.used_tools()} == set(REGISTRY.tools)
    controlnet = next(r for r in records if "Generate Image Condition On Canny Image" in r.used_tools())
    first, second = controlnet.steps  # GPT4Tools' chain: the condition map first, then the ControlNet
    assert first.tool == "Edge Detection On Image" and second.args[0] == first.observation
    assert first.observation.endswith(f"_edge_{controlnet.image_name[6:14]}_{controlnet.image_name[6:14]}.png")
    crop = next(r for r in records if r.used_tools() == ["Crop Image"])
    assert crop.steps[0].args[1].startswith("[") and crop.caption  # the box and caption from annotations.json
    # a rerun finds every job done and asks the teacher nothing
    again = generate(images, teacher, REGISTRY, raw, n=24, per_call=12)
    assert teacher.calls == 2 and again.jobs_done_before == 2 and again.records == 0


def test_template_crop_of_a_named_region_carries_that_regions_box():
    """"Crop the top left quarter" needs no object boxes: its gold box is the region, in fractions of the size."""
    from training.data.templates import REGIONS
    from visual_tools.crop import parse_box
    crop = REGISTRY.tools["Crop Image"]
    reply = TemplateTeacher().instruct(TeacherRequest("", Annotation("a cat", {"cat": [30, 0, 420, 300]}),
                                                      [crop], n=40, seed=1))
    candidates, bad = parse_reply(reply, REGISTRY)
    regional = [(region, c.args[1]) for c in candidates for region in REGIONS if region in c.instruction]
    assert bad == 0 and len(regional) >= 5 and len({region for region, _ in regional}) >= 3
    assert all(box == REGIONS[region] for region, box in regional)
    assert parse_box(REGIONS["top right quarter"], 512, 400) == (256, 0, 512, 200)


def test_filters_name_what_they_drop(images, tmp_path):
    generate(images, TemplateTeacher(), REGISTRY, tmp_path / "raw.jsonl", n=8, per_call=4)
    good = load_jsonl(tmp_path / "raw.jsonl").records[0]
    image = good.image_name
    bad = {
        "unknown tool": good.model_copy(update={"steps": [GoldStep(tool="Magic", args=[image])]}),
        "arguments": good.model_copy(update={"steps": [GoldStep(tool="Edge Detection On Image",
                                                                args=[image, "extra"])]}),
        "tool not offered": good.model_copy(update={"tools": ["Crop Image"], "steps": [
            GoldStep(tool="Edge Detection On Image", args=[image])]}),
        "missing image": good.model_copy(update={"image": str(images / "gone.png")}),
    }
    bad_path = good.model_copy(update={"id": "p", "steps": [GoldStep(tool="Edge Detection On Image",
                                                                     args=["image/ffffffff.png"])]})
    duplicate = good.model_copy(update={"id": "dup", "instruction": good.instruction + " please"})
    kept, dropped = filter_records([good, *bad.values(), bad_path, duplicate], REGISTRY)
    assert kept == [good]
    assert dropped == {"unknown tool": 1, "arguments": 2, "tool not offered": 1, "missing image": 1,
                       "near duplicate": 1}


def test_augmentations_and_split_by_tool(images, tmp_path):
    generate(images, TemplateTeacher(), REGISTRY, tmp_path / "raw.jsonl", n=40, per_call=20)
    kept, _ = filter_records(load_jsonl(tmp_path / "raw.jsonl").records, REGISTRY)
    out = augment(kept, negative=0.2, context=0.2, multi=0.2, seed=1)
    negatives = [r for r in out if r.kind == "negative"]
    contexts = [r for r in out if r.kind == "context"]
    multi = [r for r in out if r.history]
    assert negatives and all(not r.steps and r.answer for r in negatives)
    assert contexts and all(1 <= r.given_steps <= len(r.steps) for r in contexts)
    assert multi and all(r.history and all(a for _, a in r.history) for r in multi)
    assert filter_records(out, REGISTRY)[1].get("arguments", 0) == 0  # augmentations stay valid
    unseen = ["Crop Image"]
    split = split_by_tool(out, unseen, test_fraction=0.2, seed=0)
    assert split["test_unseen"] and all("Crop Image" in r.used_tools() for r in split["test_unseen"])
    assert all("Crop Image" not in r.tools and "Crop Image" not in r.used_tools() for r in split["train"])
    assert sum(map(len, split.values())) == len(out)


def test_build_dataset_report(images, tmp_path):
    report = build_dataset(images, TemplateTeacher(), REGISTRY, tmp_path / "data.jsonl", n=24, per_call=12)
    table = report.markdown()
    assert "| raw records | 24 |" in table and "| files skipped (not images) | 2 |" in table
    written = load_jsonl(tmp_path / "data.jsonl").records
    assert len(written) == sum(report.augmented.values()) and report.kept <= 24


# --- the HTTP teacher against a real server that fails the way providers do -----------------------------
@pytest.fixture(scope="module")
def flaky_server():
    import uvicorn
    app, state = FastAPI(), {"calls": 0, "mode": "ok"}

    @app.post("/v1/chat/completions")
    def chat(body: dict):
        state["calls"] += 1
        mode = state["mode"]
        if mode == "429":
            return JSONResponse({"error": {"message": "slow down"}}, 429, headers={"retry-after": "0"})
        if mode == "500-then-ok" and state["calls"] % 3:
            return JSONResponse({"error": {"message": "boom"}}, 500, headers={"retry-after": "0"})
        if mode == "hang":
            time.sleep(3)
        reply = "1. Find the edges of the cup, [Edge Detection On Image, example.jpg]"
        return {"id": "x", "object": "chat.completion", "created": 0, "model": "teacher",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                             "finish_reason": "stop"}]}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/v1#teacher", state
    server.should_exit = True
    thread.join(10)


def test_http_teacher_retries_then_fails_and_the_run_continues(flaky_server, images, tmp_path):
    url, state = flaky_server
    state.update(calls=0, mode="500-then-ok")
    teacher = load_teacher(url, retries=2, timeout=1.0)
    report = generate(images, teacher, REGISTRY, tmp_path / "a.jsonl", n=2, per_call=1)
    assert state["calls"] == 6 and report.records == 2 and not report.jobs_failed  # each job: 500, 500, ok
    state.update(calls=0, mode="429")
    report = generate(images, teacher, REGISTRY, tmp_path / "b.jsonl", n=2, per_call=1)
    assert state["calls"] == 6 and len(report.jobs_failed) == 2 and report.records == 0
    assert "429" in report.jobs_failed[0] or "slow down" in report.jobs_failed[0]
    state.update(calls=0, mode="hang")
    report = generate(images, load_teacher(url, retries=0, timeout=0.5), REGISTRY, tmp_path / "c.jsonl",
                      n=2, per_call=1)
    assert len(report.jobs_failed) == 2 and report.records == 0
    state.update(calls=0, mode="ok")  # the failed jobs run again on the rerun
    assert generate(images, teacher, REGISTRY, tmp_path / "c.jsonl", n=2, per_call=1).records == 2


def test_rate_limit_spaces_requests(flaky_server):
    url, state = flaky_server
    state.update(calls=0, mode="ok")
    teacher = load_teacher(url, rpm=300)  # one request every 0.2 s
    assert isinstance(teacher, LLMTeacher)
    request = TeacherRequest("prompt", Annotation(), REGISTRY.all(), 1, 0)
    started = time.monotonic()
    for _ in range(3):
        teacher.instruct(request)
    assert time.monotonic() - started >= 0.4 and state["calls"] == 3


def test_local_teacher_with_a_tiny_model(tiny_llama):
    teacher = load_teacher(str(tiny_llama))
    teacher.max_new_tokens = 8
    reply = teacher.instruct(TeacherRequest("Write instructions.", Annotation(), REGISTRY.all(), 1, 0))
    assert isinstance(reply, str)  # a random model writes noise; parse_reply counts it, nothing crashes
    assert parse_reply(reply, REGISTRY)[0] == []
    with pytest.raises(TeacherFailed):
        LLMTeacher(_Broken()).instruct(TeacherRequest("x", Annotation(), [], 1, 0))


class _Broken:
    name = "broken"

    def generate(self, *args, **kwargs):
        from agent.controller import ControllerError
        raise ControllerError("the model is gone")


def test_cli_generate_review_and_split(images, tmp_path):
    import json
    import os
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "TOOLSMITH_HOME": str(tmp_path / "home")}
    out = tmp_path / "gen.jsonl"
    done = subprocess.run([sys.executable, "-m", "training", "generate", "--images", str(images), "--n", "16",
                           "--per-call", "8", "--tools", "Image2Canny_cpu,CropImage_cpu", "--offer", "2",
                           "--out", str(out), "--review"], capture_output=True, text=True, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert "| raw records | 16 |" in done.stdout and "new records in the review store" in done.stdout
    assert "notes.txt" in done.stderr  # the skipped files are listed
    records = load_jsonl(out).records
    assert all(len(r.tools) == 2 for r in records)
    split = subprocess.run([sys.executable, "-m", "training", "split", "--data", str(out), "--unseen", "Crop Image",
                            "--out", str(tmp_path / "split")], capture_output=True, text=True, cwd=root, env=env)
    assert split.returncode == 0, split.stderr
    train = [json.loads(line) for line in (tmp_path / "split" / "train.jsonl").read_text().splitlines()]
    assert train and all("Crop Image" not in r["tools"] for r in train)
    bad = subprocess.run([sys.executable, "-m", "training", "generate", "--images", str(tmp_path / "nowhere"),
                          "--out", str(out)], capture_output=True, text=True, cwd=root, env=env)
    assert bad.returncode != 0 and "no such folder" in bad.stderr


TEXT_AND_OFFLINE = ToolRegistry.from_load("Image2Canny_cpu,Image2Line_cpu,CropImage_cpu,TextDetection_cpu,"
                                          "SuperResolution_cpu,Calculator_cpu,Calendar_cpu,WikiSearch_cpu,"
                                          "Text2Image_cpu,ImageCaptioning_cpu")


def test_offered_tools_vary_within_a_range_and_text_tools_get_real_observations(images, tmp_path):
    raw = tmp_path / "raw.jsonl"
    generate(images, TemplateTeacher(), TEXT_AND_OFFLINE, raw, n=60, per_call=30, offer=(2, 5), seed=3)
    records = load_jsonl(raw).records
    sizes = {len(r.tools) for r in records}
    assert min(sizes) >= 2 and max(sizes) <= 5 and len(sizes) >= 3  # a few to several, drawn per record
    assert len({tuple(r.tools) for r in records}) > len(records) // 2  # and shuffled
    calc = [r for r in records if r.used_tools() == ["Calculator"]]
    assert calc and all(r.steps[0].observation == TEXT_AND_OFFLINE.tools["Calculator"](expression=r.steps[0].args[0])
                        for r in calc)  # what the tool answers, not a placeholder
    search = [r for r in records if r.used_tools() == ["WikiSearch"]]
    assert search and all(r.steps[0].args[0] in r.instruction and len(r.steps[0].observation) > 40 for r in search)
    assert all("Eiffel Tower" not in r.instruction for r in search)  # the hand-written cases' topics stay out


def test_crop_phrasings_state_their_box_and_the_gold_box_is_it():
    crop = REGISTRY.tools["Crop Image"]
    reply = TemplateTeacher().instruct(TeacherRequest("", Annotation("a cat", {}), [crop], n=80, seed=2))
    candidates, bad = parse_reply(reply, REGISTRY)
    stated = [c for c in candidates if any(ch.isdigit() for ch in c.instruction)]
    assert bad == 0 and len(stated) >= 20
    sized = 0
    for c in stated:  # the box is [x1, y1, x2, y2] of the numbers the request states: corners, or corner and size
        x1, y1, x2, y2 = (float(v) for v in re.fullmatch(r"\[(.*), (.*), (.*), (.*)\]", c.args[1]).groups())
        assert x1 < x2 and y1 < y2
        numbers = sorted(float(v) for v in re.findall(r"\d+(?:\.\d+)?", c.instruction))
        corners = numbers == sorted([x1, y1, x2, y2])
        sized += not corners
        assert corners or numbers == sorted([x1, y1, x2 - x1, y2 - y1]), c.instruction
    assert sized >= 1  # "a 200x150 box starting at (10, 20)" is stated too


def test_chains_and_follow_ups(images, tmp_path):
    generate(images, TemplateTeacher(), TEXT_AND_OFFLINE, tmp_path / "raw.jsonl", n=60, per_call=30)
    kept, _ = filter_records(load_jsonl(tmp_path / "raw.jsonl").records, TEXT_AND_OFFLINE)
    out = augment(kept, chain=0.3, followup=0.2, tools=TEXT_AND_OFFLINE.tools, seed=2)
    chains = [r for r in out if r.source.teacher.endswith("+chain")]
    assert chains and all(len(r.steps) == 2 for r in chains)
    for r in chains:
        first, second = r.steps
        assert TEXT_AND_OFFLINE.tools[first.tool].output == "image_path" and first.observation in second.args
        assert second.tool in r.tools and r.answer
    follow = [r for r in out if r.source.teacher.endswith("+followup")]
    assert follow and all(not r.steps and r.history and r.kind == "negative" for r in follow)
    assert all(r.answer != r.history[-1][1] for r in follow)  # copying the earlier answer is never the target
    assert filter_records(out, TEXT_AND_OFFLINE)[1].get("arguments", 0) == 0  # still valid records


def test_paraphrases_keep_the_call_and_drop_what_changes_it():
    from scripted import ScriptedController

    from training.data.paraphrase import paraphrase
    from training.data.records import Record, Source
    record = Record(id="c", image_name="image/aaaa1111.png", tools=["Crop Image"],
                    instruction="Crop the box [10, 20, 110, 220] from the photo.", answer="done",
                    steps=[GoldStep(tool="Crop Image", args=["image/aaaa1111.png", "[10, 20, 110, 220]"])],
                    source=Source(teacher="template"))
    replies = ["Please cut [10, 20, 110, 220] out of my picture.",  # kept
               "Crop the box [10, 20, 110, 200] from the photo.",  # a number changed
               "Crop the box [10, 20, 110, 220] from the photo please.",  # the same words
               "I like turtles very much today, do you?",  # another request (its numbers are gone too)
               "Please cut [10, 20, 110, 220] out of my picture."]  # again
    class Teacher(ScriptedController):  # n different samples in one call, as a sampling LLM gives
        def generate(self, prompt, **kwargs):
            return replies[:kwargs["n"]]
    made, report = paraphrase([record], Teacher([]), n=5)
    assert [r.instruction for r in made] == ["Please cut [10, 20, 110, 220] out of my picture."]
    assert made[0].steps == record.steps and made[0].status == "pending" and made[0].id != record.id
    assert made[0].source.teacher == "scripted+paraphrase"
    assert report.dropped == {"numbers changed": 2, "too close to the original": 1, "repeated": 1}
    from rouge_score.rouge_scorer import RougeScorer
    from training.data.paraphrase import why_not
    assert why_not("Detect the edges of this image.", "I like turtles very much.", RougeScorer(["rougeL"])) \
        == "off topic"


def test_cli_paraphrase(images, tmp_path, tiny_llama):
    generate(images, TemplateTeacher(), REGISTRY, tmp_path / "raw.jsonl", n=4, per_call=4)
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "training", "paraphrase", "--data", str(tmp_path / "raw.jsonl"),
                           "--teacher", str(tiny_llama), "--n", "2", "--out", str(tmp_path / "p.jsonl")],
                          capture_output=True, text=True, timeout=300, cwd=ASSETS.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "4 instructions, 8 paraphrases asked" in done.stdout and (tmp_path / "p.jsonl").is_file()
