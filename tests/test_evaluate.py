"""GPT4Tools' success rates, the case formats, the evaluator and its CLI."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripted import ScriptedController, last_image
from training.evaluation.evaluate import case_to_record, evaluate, load_cases, markdown, offer, summary, write_report
from training.evaluation.metrics import score
from visual_tools import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ToolRegistry.from_load().tools
YES, NO = "Thought: Do I need to use a tool? Yes", "Thought: Do I need to use a tool? No"
VQA = f"{YES}\nAction: Answer Question About The Image\nAction Input: image/abc.png, what color is the cat\n" \
      f"Observation: grey\n{NO}\nAI: grey"


@pytest.mark.parametrize("pred, expected", [
    (VQA, (1, 1, 1, 1)),
    (VQA.replace("what color", "what colour"), (1, 1, 0.9, 1)),  # BLEU-1 4/5 on the text argument
    (VQA.replace("what color is the cat", "the weather"), (1, 1, 0.556, 1)),  # BLEU-1 1/2 x BP e^-1.5 = .11
    (VQA.replace("Answer Question About The Image", "Get Photo Description"), (1, 0, 1, 0)),
    (VQA.replace("image/abc.png", "abc.jpg"), (1, 1, 0, 0)),  # the image argument must name a .png
    (VQA.replace("image/abc.png, what color", "image/abc.png what color"), (1, 1, 0, 0)),  # argument count
    (f"{NO}\nAI: grey", (0, 0, 0, 0)),
    ("garbage that does not parse", (0, 0, 0, 0)),
])
def test_tool_case_scores(pred, expected):
    result = score(VQA, pred)
    assert (result.thought, result.action, round(result.args, 3), result.success) == pytest.approx(expected)


def test_form_errors_name_what_no_grammar_would_let_through():
    from training.evaluation.evaluate import form_errors
    images = ["image/abc.png"]
    assert form_errors(VQA, TOOLS, images) == [] and form_errors(f"{NO}\nAI: hi", TOOLS, []) == []
    assert form_errors(f"{YES}\nAction: Canny Edge Detection On Image\nAction Input: image/abc.png", TOOLS, images) \
        == ["unknown tool 'Canny Edge Detection On Image'"]
    assert form_errors(f"{YES}\nAction: Edge Detection On Image", TOOLS, images) == ["not in the format"]
    assert form_errors(f"{YES}\nAction: Edge Detection On Image\nAction Input: image_path", TOOLS, images) \
        == ["no image named 'image_path'"]
    assert form_errors(VQA.replace("image/abc.png, ", ""), TOOLS, images) == [
        "arguments that do not fit Answer Question About The Image"]


def test_no_tool_case_scores():
    gold = f"{NO}\nAI: Paris"
    assert score(gold, f"{NO}\nAI: It is Paris.").success == 1.0
    assert score(gold, f"{NO}\nParis").success == 0.0  # no `AI:` line
    assert score(gold, f"{YES}\nAction: Detection\nAction Input: image/a.png").success == 0.0


def test_strict_images_require_the_gold_root():
    gold = f"{YES}\nAction: Edge Detection On Image\nAction Input: image/aaaa1111.png\nObservation: x"
    same_root = gold.replace("image/aaaa1111.png", "image/ffff0000_crop_aaaa1111_aaaa1111.png")
    other = gold.replace("image/aaaa1111.png", "image/ffff0000.png")
    assert score(gold, other).success == 1.0  # GPT4Tools only checks '.png'
    assert score(gold, same_root, strict_images=True).success == 1.0
    assert score(gold, other, strict_images=True).success == 0.0


def test_plain_case_maps_image_arguments_and_chains():
    case = {"id": "c1", "image": "photos/cat.jpg", "input": "edges then caption",
            "gold": [{"tool": "Edge Detection On Image", "args": ["cat.jpg"]},
                     {"tool": "Get Photo Description", "args": ["cat.jpg"]}]}
    record = case_to_record(case, TOOLS)
    first, second = record.steps
    assert first.args == [record.image_name] and record.image_name.startswith("image/")
    assert second.args == [first.observation]  # the chained call reads the first call's output
    assert first.observation.endswith(f"_edge_{record.image_name[6:14]}_{record.image_name[6:14]}.png")
    negative = case_to_record({"id": "c2", "image": None, "input": "hi", "gold": []}, TOOLS)
    assert negative.steps == [] and negative.kind == "negative"


def perfect(prompt: str) -> str:
    """Answers like a well-tuned model: one correct call, then the answer."""
    tail = prompt.rpartition("New input:")[2]
    if "capital" in tail:
        return f"{NO}\nAI: Paris"
    if "Observation:" in tail:
        return f"{NO}\nAI: done"
    image = last_image(prompt)
    tool = "Crop Image" if "crop" in tail else "Edge Detection On Image"
    args = f"{image}, [0, 0, 10, 10]" if tool == "Crop Image" else image
    return f"{YES}\nAction: {tool}\nAction Input: {args}"


def cases_file(tmp_path) -> Path:
    rows = [{"id": "edges", "image": "cat.png", "input": "find the edges", "tools": ["Edge Detection On Image"],
             "gold": [{"tool": "Edge Detection On Image", "args": ["cat.png"]}]},
            {"id": "crop", "image": "cat.png", "input": "crop the cat",
             "tools": ["Edge Detection On Image", "Crop Image"],
             "gold": [{"tool": "Crop Image", "args": ["cat.png", "[0, 0, 10, 10]"]}]},
            {"id": "none", "image": None, "input": "the capital of France?", "tools": ["Crop Image"], "gold": []}]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    return path


def test_evaluate_a_perfect_and_a_broken_controller(tmp_path):
    cases, problems = load_cases(cases_file(tmp_path), TOOLS)
    assert len(cases) == 3 and problems and problems[0].startswith("line 4")
    good = evaluate(ScriptedController([perfect] * 20), cases, TOOLS, unseen=["Crop Image"])
    rows = {r["set"]: r for r in summary(good)}
    assert rows["overall"]["SR"] == 100.0 and rows["unseen tools"]["cases"] == 1
    assert rows["(no tool)"]["cases"] == 1 and rows["Crop Image"]["SR"] == 100.0
    bad = evaluate(ScriptedController(["I am not sure what you mean."] * 20), cases, TOOLS)
    assert all(p.SR == 0.0 for p in bad)  # replies that do not parse are failures, never a crash
    paths = write_report(good, tmp_path / "report")
    assert "| overall | 3 | 100.0 | 100.0 | 100.0 | 100.0 |" in paths["markdown"].read_text()
    assert paths["csv"].read_text().startswith("set,cases,SR_t,SR_act,SR_args,SR")
    assert len(paths["predictions"].read_text().splitlines()) == 3
    assert len(markdown(summary(good)).splitlines()) == 2 + len(summary(good))


def test_cli_evaluate_with_a_real_model(tiny_llama, tmp_path):
    done = subprocess.run([sys.executable, "-m", "training", "evaluate", "--data", str(cases_file(tmp_path)),
                           "--controller", str(tiny_llama), "--max-steps", "2", "--json", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout[done.stdout.index("{"):])
    assert result["rows"][0]["set"] == "overall" and result["rows"][0]["cases"] == 3
    assert "line 4" in done.stderr
    assert (tmp_path / "out" / "summary.csv").is_file()


def test_a_tool_without_inputs_is_right_with_an_empty_input():
    gold = f"{YES}\nAction: Calendar\nAction Input: \nObservation: Today is Friday."
    assert score(gold, f"{YES}\nAction: Calendar\nAction Input: ").success == 1.0
    assert score(gold, f"{YES}\nAction: Calculator\nAction Input: ").success == 0.0


def test_cases_with_history_and_the_offered_tools_set_by_the_caller():
    case = {"id": "h", "image": "cat.png", "input": "what did I ask?", "gold": [],
            "history": [["find the edges", "image/aaaa1111_edge_bbbb2222_bbbb2222.png"]]}
    record = case_to_record(case, TOOLS)
    assert record.history == [("find the edges", "image/aaaa1111_edge_bbbb2222_bbbb2222.png")]
    edges = case_to_record({"id": "e", "image": "cat.png", "input": "edges",
                            "gold": [{"tool": "Edge Detection On Image", "args": ["cat.png"]}]}, TOOLS)
    offered = offer([record, edges], ["Crop Image"])
    assert offered[0].tools == ["Crop Image"] and offered[1].tools == ["Crop Image", "Edge Detection On Image"]
    assert offer([edges], None)[0].tools == list(TOOLS)


def test_the_hand_written_cases():
    """People's own words: enough of each kind, every gold call valid for its tool."""
    from collections import Counter
    path = ROOT / "assets" / "eval" / "handwritten.jsonl"
    cases, problems = load_cases(path, TOOLS)
    kinds = Counter(json.loads(line)["kind"] for line in path.read_text().splitlines())
    assert not problems and len(cases) >= 80
    assert kinds["notool"] >= 15 and kinds["crop"] >= 10 and kinds["chain"] >= 10
    assert {t for c in cases for t in c.used_tools()} >= {"Edge Detection On Image", "Line Detection On Image",
                                                           "Sketch Detection On Image", "Pose Detection On Image",
                                                           "Crop Image", "Text Detection On Image",
                                                           "Face Detection On Image", "Super Resolution On Image",
                                                           "Calculator", "Calendar", "WikiSearch"}
    from training.data.filters import check
    assert all(check(c, ToolRegistry.from_load(None)) in (None, "missing image") for c in cases)
    rows = {r["set"]: r for r in summary(evaluate(ScriptedController([perfect]), cases[:3], TOOLS))}
    assert rows["overall"]["cases"] == 3
