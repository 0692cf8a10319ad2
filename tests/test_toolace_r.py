"""ToolACE-R: call parsing in both formats, Hungarian/Jaccard difficulty, batched sampling, self-refine data and
inference, the ToolACE importer, BFCL through bfcl-eval's own checker, and the CLI loop on a tiny model."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from conftest import free_port, wait_for
from scripted import ScriptedController
from tiny_models import teach_tiny_llama

from agent.controller import ControllerError
from agent.chat_format import format_prompt
from agent.hf_controller import TransformersController
from agent.openai_controller import OpenAIController
from training.data.records import GoldStep, Record, Source, save_jsonl
from training.tuning.sft import TrainConfig, load_tokenizer
from training.toolace_r import bfcl
from training.toolace_r.calls import Call, CallParseError, format_calls, parse_calls, parse_step_call
from training.toolace_r.data import from_record, from_toolace, load_samples, split
from training.toolace_r.difficulty import Scored, alignment, call_score, difficulty, score_samples
from training.toolace_r.iterate import Settings, training_rows
from training.toolace_r.refine import SelfRefine, refine_prompt, same_answer
from visual_tools import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
EDGES = "Edge Detection On Image"


@pytest.fixture(scope="module")
def tools():
    return ToolRegistry.from_load("Image2Canny_cpu,Calculator_cpu").tools


def record(steps: list[GoldStep], answer: str | None = "done") -> Record:
    return Record(id="r1", image_name="image/1a2b3c4d.png", caption="a cat", tools=[EDGES, "Calculator"],
                  instruction="Find the edges", steps=steps, answer=answer, source=Source(teacher="test"))


# --- calls -------------------------------------------------------------------------------------------------------
def test_python_call_syntax_with_spaces_dots_and_nested_values():
    calls = parse_calls('[Market Trends API(trend_type="INDEXES", country="us"), math.factorial(number=5), '
                        'plot(points=[[1, 2], [3, 4]], style={"color": "red, blue"}, scale=x)]')
    assert calls == [Call("Market Trends API", {"trend_type": "INDEXES", "country": "us"}),
                     Call("math.factorial", {"number": 5}),
                     Call("plot", {"points": [[1, 2], [3, 4]], "style": {"color": "red, blue"}, "scale": "x"})]
    assert parse_calls(format_calls(calls)) == calls
    assert parse_calls("get_weather(city='Paris')") == [Call("get_weather", {"city": "Paris"})]  # bare, as BFCL
    assert parse_calls("```python\n[f()]\n```") == [Call("f", {})]
    assert parse_calls("I cannot help with that: no function fits.") == []  # a text answer: no call
    assert parse_calls("[]") == []


@pytest.mark.parametrize("reply", ["[f(a=1", "[f(a=1)", "[f(1, 2)]", "[f(a=)]", "[f(**kw)]", "[(a=1)]",
                                   '[f(a="unclosed)]', "[f(a=1)), g()]", "[f(a=1, a=2)]",
                                   "[f(a=" + "[" * 5000 + "]" * 5000 + ")]"])
def test_broken_call_lists_raise_a_parse_error(reply):
    with pytest.raises(CallParseError):
        parse_calls(reply)


def test_our_step_format_names_the_positional_inputs(tools):
    step = f"Thought: Do I need to use a tool? Yes\nAction: {EDGES}\nAction Input: image/1a2b3c4d.png"
    assert parse_step_call(step, tools) == [Call(EDGES, {"image_path": "image/1a2b3c4d.png"})]
    assert parse_step_call("Thought: Do I need to use a tool? No\nAI: hi", tools) == []
    with pytest.raises(CallParseError):
        parse_step_call("just words", tools)


# --- difficulty ----------------------------------------------------------------------------------------------------
def test_jaccard_per_call_counts_a_wrong_value_in_the_union_only():
    gold = Call("f", {"a": 1, "b": 2})
    assert call_score(gold, Call("f", {"a": 1, "b": 2})) == 1.0
    assert call_score(gold, Call("f", {"a": 1, "b": 3})) == pytest.approx(1 / 3)  # {a=1} / {a=1, b=2, b=3}
    assert call_score(gold, Call("f", {"a": 1})) == 0.5
    assert call_score(gold, Call("g", {"a": 1, "b": 2})) == 0.0
    assert call_score(Call("f"), Call("f")) == 1.0
    assert call_score(Call("f", {"a": 1}), Call("f", {"a": 1.5})) == 0.0  # one argument, wrong value


def test_hungarian_alignment_is_order_free_and_divides_by_the_longer_list():
    f, g = Call("f", {"x": 1}), Call("g", {"y": 2})
    assert alignment([f, g], [g, f]) == 1.0
    assert alignment([f, g], [f]) == 0.5
    assert alignment([f], [f, g, g]) == pytest.approx(1 / 3)
    assert alignment([f, f], [f]) == 0.5  # duplicate gold calls: one is matched
    assert alignment([f], [f, f]) == 0.5  # a duplicated prediction is not free
    assert alignment([], []) == 1.0  # irrelevance: no call needed, none made
    assert alignment([], [f]) == 0.0 and alignment([f], []) == 0.0


def test_difficulty_of_unparsable_samples_and_k_of_one():
    gold = [Call("f", {"x": 1})]
    assert difficulty(gold, ["[f(x=1)]", "[f(x=1", "[f(x=2)]", "no idea"], "python") == pytest.approx(0.75)
    assert difficulty(gold, ["[f(x=1)]"], "python") == 0.0  # k = 1
    assert difficulty([], ["I can't: nothing fits", "[f(x=1)]"], "python") == 0.5  # empty gold list
    with pytest.raises(ValueError):
        difficulty(gold, [], "python")
    with pytest.raises(ValueError):
        score_samples(lambda p, k: ["[f(x=1)]"] * k, ["p"], [gold], "python", k=0)


def test_batched_samples_share_one_prefill_and_match_single_greedy(tiny_llama):
    controller = TransformersController.from_pretrained(str(tiny_llama))
    prompt = "The capital of France is Paris. " * 4
    single = controller.generate(prompt, max_new_tokens=6)[0]
    before = controller.prompt_tokens
    batch = controller.generate(prompt, max_new_tokens=6, n=4)
    assert batch == [single] * 4  # greedy: the copied cache gives the same text for every draw
    assert controller.prompt_tokens - before == len(controller.encode_prompt(prompt))  # encoded once
    sampled = controller.generate(prompt, max_new_tokens=6, n=3, temperature=1.0)
    assert len(sampled) == 3 and all(isinstance(s, str) for s in sampled)


def test_alpha_must_be_below_beta():
    with pytest.raises(ValueError, match="alpha < beta"):
        Settings(alpha=0.9, beta=0.9).check()
    Settings(alpha=0.0, beta=0.9, k=1).check()


# --- self-refine ---------------------------------------------------------------------------------------------------
def test_adaptive_refine_stops_when_two_answers_parse_the_same():
    inner = ScriptedController(["[f(x=1, y=2)]", "[f(y=2, x=1)]"])
    refiner = SelfRefine(inner, "adaptive", rounds=5, style="python")
    assert refiner.generate("q") == ["[f(y=2, x=1)]"]
    assert refiner.rounds_log == [1] and len(inner.prompts) == 2
    assert inner.prompts[1] == refine_prompt("q", "[f(x=1, y=2)]")


def test_a_refine_loop_that_never_converges_stops_at_n():
    inner = ScriptedController(["[f(x=1)]", "[f(x=2)]"])
    refiner = SelfRefine(inner, "adaptive", rounds=3, style="python")
    refiner.generate("q")
    assert refiner.rounds_log == [3] and len(inner.prompts) == 4
    vanilla = SelfRefine(ScriptedController(["[f(x=1)]"]), "vanilla", rounds=2, style="python")
    vanilla.generate("q")
    assert vanilla.rounds_log == [2]  # vanilla always runs n rounds
    none = SelfRefine(ScriptedController(["[f(x=1)]"]), "none", style="python")
    assert none.generate("q") == ["[f(x=1)]"] and none.rounds_log == [0]
    with pytest.raises(ValueError):
        SelfRefine(inner, "sometimes")


def test_same_answer_compares_parsed_steps(tools):
    a = f"Thought: Do I need to use a tool? Yes\nAction: {EDGES}\nAction Input: image/1a2b3c4d.png"
    assert same_answer(a, a + "  ", "gpt4tools", tools)
    assert not same_answer(a, a.replace("1a2b", "9a2b"), "gpt4tools", tools)
    assert same_answer("[f(a=1)]", "[f(a=1.0)]", "python") is False  # 1 and 1.0 are different values
    assert same_answer("garbage [", "garbage [", "python")


# --- data ----------------------------------------------------------------------------------------------------------
def test_every_tool_has_a_function_schema_from_its_own_class():
    for tool in ToolRegistry.from_load().all():
        doc = tool.function_doc()
        assert doc["name"] == tool.name and doc["description"] == tool.description
        assert list(doc["parameters"]["properties"]) == [i.name for i in tool.inputs]
        assert doc["parameters"]["required"] == [i.name for i in tool.required()]


def test_records_become_function_calling_samples(tools):
    rec = record([GoldStep(tool=EDGES, args=["image/1a2b3c4d.png"], observation="image/1a2b_edge_1a2b.png")])
    first, final = from_record(rec, tools)
    assert first.gold == [Call(EDGES, {"image_path": "image/1a2b3c4d.png"})]
    assert first.target == '[Edge Detection On Image(image_path="image/1a2b3c4d.png")]'
    assert '"name": "Edge Detection On Image"' in first.prompt and "You are an expert in composing functions" \
        in first.prompt and first.prompt.rstrip().endswith("User: Find the edges")
    assert final.gold == [] and final.target == "done" and "Tool: image/1a2b_edge_1a2b.png" in final.prompt
    steps = from_record(rec, tools, style="gpt4tools")
    assert steps[0].gold == first.gold and steps[0].target.endswith("Observation:") and steps[1].gold == []


def test_toolace_import_reads_names_with_spaces_tool_turns_and_text_turns(tmp_path, tools):
    functions = [{"name": "Market Trends API", "description": "trends", "parameters": {"type": "dict",
                  "properties": {"trend_type": {"type": "string"}}, "required": ["trend_type"]}}]
    item = {"system": "You are an expert. Here is a list of functions in JSON format that you can invoke:\n"
                      + json.dumps(functions) + ". Should you decide to return the function call(s)...",
            "conversations": [{"from": "user", "value": "What are the market indexes?"},
                              {"from": "assistant", "value": '[Market Trends API(trend_type="MARKET_INDEXES")]'},
                              {"from": "tool", "value": '[{"name": "Market Trends API", "results": {"S&P": 1}}]'},
                              {"from": "assistant", "value": "The S&P is at 1."}]}
    call_sample, text_sample = from_toolace(item, 0)
    assert call_sample.gold == [Call("Market Trends API", {"trend_type": "MARKET_INDEXES"})]
    assert text_sample.gold == [] and text_sample.target == "The S&P is at 1."
    assert "Tool: [{" in text_sample.prompt and '"name": "Market Trends API"' in call_sample.prompt
    broken = {"system": "no functions here", "conversations": []}
    path = tmp_path / "data.json"
    path.write_text(json.dumps([item, broken, {**item, "conversations": [{"from": "assistant", "value": "[X(a=)]"}]}]))
    loaded = load_samples(path, tools)
    assert loaded.kind == "ToolACE" and len(loaded.samples) == 2
    assert [p.split(":")[0] for p in loaded.problems] == ["item 1", "item 2"]


def test_split_holds_out_whole_records(tools):
    recs = [record([GoldStep(tool=EDGES, args=["image/1a2b3c4d.png"], observation="x")]).model_copy(
        update={"id": f"r{i}"}) for i in range(10)]
    samples = [s for r in recs for s in from_record(r, tools)]
    pool, dev = split(samples, 0.2)
    assert len(dev) == 4 and len(pool) == 16
    assert not {s.id.rsplit("-", 1)[0] for s in dev} & {s.id.rsplit("-", 1)[0] for s in pool}


def test_self_refine_rows_mask_the_first_answer_and_keep_right_first_answers(tiny_llama, tools):
    tokenizer, chat_format = load_tokenizer(TrainConfig(data="", out="", base=str(tiny_llama)))
    sample = from_record(record([GoldStep(tool=EDGES, args=["image/1a2b3c4d.png"], observation="x")]), tools)[0]
    wrong = Scored(0.5, ["[Edge Detection On Image(image_path=\"image/0000.png\")]"])
    right = Scored(0.2, [sample.target])
    rows = training_rows([(sample, wrong), (sample, right)], tokenizer, chat_format, refine=True, cutoff=100000)
    assert len(rows) == 4  # each sample as is and as a refine turn, the already-right one included
    refine_row = rows[1]
    learned = [t for t, label in zip(refine_row["input_ids"], refine_row["labels"]) if label != -100]
    assert tokenizer.decode(learned, skip_special_tokens=True) == sample.target
    assert "image/0000.png" in tokenizer.decode(refine_row["input_ids"])  # A1 is read, never learned


# --- BFCL ----------------------------------------------------------------------------------------------------------
def test_bfcl_data_and_checker_come_from_the_package():
    cases = bfcl.load_category("simple_python")
    assert len(cases) == 400 and cases[0].id == "simple_python_0"
    assert "Note that the provided function is in Python 3 syntax." in cases[0].prompt
    case = cases[0]
    assert bfcl.check(case, "[calculate_triangle_area(base=10, height=5)]") == (True, "")
    assert bfcl.check(case, "[calculate_triangle_area(base=10, height=6)]")[0] is False
    assert bfcl.check(case, "[calculate_triangle_area(base=10")[1].startswith("unparsable")
    dotted = bfcl.load_category("parallel", 1)[0]  # gold names with a dot: spotify.play
    assert bfcl.check(dotted, '[spotify.play(artist="Maroon 5", duration=15), '
                              'spotify.play(artist="Taylor Swift", duration=20)]') == (True, "")
    irrelevant = bfcl.load_category("irrelevance", 1)[0]
    assert irrelevant.answer is None
    assert bfcl.check(irrelevant, "None of the functions can compute this.") == (True, "unparsable: SyntaxError")
    assert bfcl.check(irrelevant, "[determine_body_mass_index(weight=1.0, height=2.0)]") == (False, "made a call")
    with pytest.raises(ValueError, match="supported"):
        bfcl.load_category("multi_turn_base")


def test_bfcl_summary_counts_unparsable_and_rounds():
    cases = bfcl.load_category("simple_python", 2) + bfcl.load_category("irrelevance", 2)
    replies = iter([("[calculate_triangle_area(base=10, height=5)]", 1), ("[broken(", 5), ("[broken(", 2),
                    ("no call", 1)])
    rows = bfcl.summary(bfcl.evaluate(lambda prompt: next(replies), cases))
    assert rows == [{"category": "simple_python", "cases": 2, "accuracy": 50.0, "unparsable": 1,
                     "mean refine rounds": 3.0},
                    {"category": "irrelevance", "cases": 2, "accuracy": 100.0, "unparsable": 2,
                     "mean refine rounds": 1.5}]  # neither decodes to a call: right, by BFCL's rule
    assert "except in irrelevance" in bfcl.markdown(rows)


# --- the CLI -------------------------------------------------------------------------------------------------------
def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "training", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_cli_refuses_alpha_not_below_beta(tmp_path):
    result = run_cli("toolace-r", "--data", str(tmp_path / "none.jsonl"), "--alpha", "0.5", "--beta", "0.5")
    assert result.returncode != 0 and "alpha < beta" in result.stderr


SEGMENT = "Segment the given object"


def segment_record(number: int) -> Record:
    return Record(id=f"s{number}", image_name="image/1a2b3c4d.png", caption="a cat", tools=[SEGMENT],
                  instruction="Segment the cat", answer=None, source=Source(teacher="test"),
                  steps=[GoldStep(tool=SEGMENT, args=["image/1a2b3c4d.png", "cat"], observation="x")])


@pytest.fixture(scope="module")
def taught(tiny_llama, tmp_path_factory) -> tuple[Path, Path]:
    """A tiny model taught to segment the dog instead of the cat, and 6 records asking for the cat."""
    root = tmp_path_factory.mktemp("taught")
    sample = from_record(segment_record(0), ToolRegistry.from_load().tools)[0]
    tokenizer = load_tokenizer(TrainConfig(data="", out="", base=str(tiny_llama)))[0]
    target = sample.target.replace('"cat"', '"dog"') + tokenizer.eos_token
    context = format_prompt(tokenizer, sample.prompt, "chat")
    model = teach_tiny_llama(tiny_llama, root / "taught", target, context=context)
    return model, save_jsonl([segment_record(i) for i in range(6)], root / "records.jsonl")


def test_cli_iterates_and_evaluates_on_bfcl(taught, tmp_path):
    """Every draw of the taught model aligns 1/3 (D = 2/3), so the whole pool is kept, an adapter is trained, and
    the loop stops when the dev score has not improved twice."""
    taught, data = taught
    out = tmp_path / "run"
    result = run_cli("toolace-r", "--data", str(data), "--base", str(taught), "--out", str(out), "--iters", "2",
                     "--k", "2", "--temperature", "0", "--max-steps", "1", "--max-new-tokens", "100",
                     "--dev-fraction", "0.3", "--patience", "1")
    assert result.returncode == 0, result.stderr[-2000:]
    events = [json.loads(line) for line in (out / "toolace_log.jsonl").read_text().splitlines()]
    rows = [e for e in events if e["event"] == "iteration"]
    assert rows[0]["iteration"] == 0 and rows[0]["score"] == pytest.approx(33.33)
    assert rows[1]["pool"] == 4 and rows[1]["kept"] == 4 and rows[1]["mean_difficulty"] == pytest.approx(2 / 3, 1e-3)
    assert (out / "iter-1" / "adapter" / "adapter_config.json").is_file()
    assert [json.loads(line)["difficulty"] for line in (out / "difficulty-1.jsonl").read_text().splitlines()] \
        == [pytest.approx(2 / 3)] * 4
    assert [r["iteration"] for r in rows] == [0, 1, 2]  # no better score at 1: patience 1 tries once more
    assert "iteration 2 did not improve" in result.stdout and (out / "iter-2" / "adapter").is_dir()
    assert "| iteration | pool | kept | mean D |" in result.stdout and events[-1]["event"] == "done"
    adapter = str(out / "iter-1" / "adapter")
    again = run_cli("toolace-r", "--data", str(data), "--base", str(taught), "--out", str(tmp_path / "again"),
                    "--init-adapter", adapter, "--iters", "1", "--k", "1", "--temperature", "0", "--max-steps", "1",
                    "--max-new-tokens", "100", "--dev-fraction", "0.3")
    assert again.returncode == 0, again.stderr[-2000:]
    first = [json.loads(line) for line in (tmp_path / "again" / "toolace_log.jsonl").read_text().splitlines()]
    assert first[0]["init_adapter"] == adapter and first[2]["adapter"] == adapter  # iteration 0 scores it
    result = run_cli("bfcl", "--controller", str(taught), "--adapter", adapter,
                     "--limit", "2", "--refine", "adaptive", "--rounds", "2", "--max-new-tokens", "8",
                     "--category", "simple_python", "--category", "irrelevance")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "| simple_python | 2 |" in result.stdout and "| irrelevance | 2 |" in result.stdout
    assert "adaptive self-refine" in result.stdout


def test_sampling_on_an_openai_compatible_server_with_runtime_lora(taught, tmp_path):
    """`--sampler URL`: the k draws and dev answers come from a server (ours speaks vLLM's runtime-LoRA API);
    each iteration's adapter is loaded there by path; the figures are those of local sampling."""
    taught, data = taught
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "agent", "serve", "--controller", str(taught), "--port", str(port),
                               "--model-name", "base"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        wait_for(lambda: httpx.get(f"{url}/models").status_code == 200, 120)
        out = tmp_path / "remote"
        result = run_cli("toolace-r", "--data", str(data), "--base", str(taught), "--out", str(out), "--iters", "2",
                         "--k", "2", "--temperature", "0", "--max-steps", "1", "--max-new-tokens", "100",
                         "--dev-fraction", "0.3", "--patience", "1", "--sampler", f"{url}#base")
        assert result.returncode == 0, result.stderr[-2000:]
        rows = [json.loads(line) for line in (out / "toolace_log.jsonl").read_text().splitlines()]
        rows = [r for r in rows if r["event"] == "iteration"]
        assert rows[0]["score"] == pytest.approx(33.33) and rows[1]["kept"] == 4
        assert rows[1]["mean_difficulty"] == pytest.approx(2 / 3, 1e-3)
        served = [m["id"] for m in httpx.get(f"{url}/models").json()["data"]]
        assert served[0] == "base" and len(served) == 3  # iter-1's adapter (dev, then sampling), iter-2's (dev)
        bad = OpenAIController(url, model="base").with_adapter
        with pytest.raises(ControllerError, match="did not load"):
            bad("missing", str(tmp_path / "no-adapter"))
    finally:
        server.kill()
        server.wait()
