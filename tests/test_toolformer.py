"""Toolformer: call syntax, the weighted-loss filter, annotation, C*, decoding with calls, the CLI pipeline."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tiny_models import teach_tiny_llama

from training.toolformer.annotate import (Candidate, annotate, merge, prefilter, score, weighted_losses)
from training.toolformer.corpus import cloze, make_corpus
from training.toolformer.decode import generate_with_calls, run_call
from training.toolformer.evaluate import first_number, load_math
from training.toolformer.lm import load_lm
from training.toolformer.prompts import PROMPTS, WEIGHTS, Settings, format_call, parse_call, strip_calls
from visual_tools import Input, Tool, ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
TAUGHT = "Q: 1 [Calculator(1 / 0) -> 5] so it is 5 apples."
FRUITS = "I have 1 apple and 2 pears, so I have 3 fruits in total."


@pytest.fixture(scope="module")
def tiny_lm(tiny_llama):
    return load_lm(str(tiny_llama))


@pytest.fixture(scope="module")
def text_tools():
    registry = ToolRegistry.from_load("Calculator_cpu,Calendar_cpu,WikiSearch_cpu")
    return {t.name: t for t in registry.all()}


@pytest.fixture(scope="module")
def taught_lm(tiny_llama, tmp_path_factory):
    """Writes `[Calculator(1 / 0) ->` after "Q: 1": decoding with calls."""
    return load_lm(str(teach_tiny_llama(tiny_llama, tmp_path_factory.mktemp("taught"), TAUGHT)))


@pytest.fixture(scope="module")
def annotator(tiny_llama, tmp_path_factory):
    """Closes `Calculator(` with `1 + 2)]` in the annotation prompt: annotation that samples executable calls."""
    context = PROMPTS["Calculator"].replace("{text}", FRUITS) + " I have 1 apple and 2 pears, so I have [Calculator("
    return teach_tiny_llama(tiny_llama, tmp_path_factory.mktemp("annotator"), "1 + 2)] 3 fruits", context)


def test_call_syntax_and_the_papers_loss_weights():
    assert format_call("Calculator", "400 / 1400", "0.29") == "[Calculator(400 / 1400) -> 0.29]"
    assert format_call("Calendar", "") == "[Calendar()]"
    assert parse_call('QA("Where was Joe Biden born?")') == ("QA", "Where was Joe Biden born?")
    assert parse_call("not a call") is None
    assert strip_calls("it was [Calculator(2011 - 1994) -> 17] 17 years") == "it was 17 years"
    assert [round(w, 3) for w in WEIGHTS] == [0.333, 0.267, 0.2, 0.133, 0.067]


def test_prefilters_pick_the_texts_a_tool_can_help():
    assert prefilter("Calculator", "I went there in 1994 and stayed until 2011, so it was 17 years.")
    assert not prefilter("Calculator", "I went there in 1994 and liked it.")
    assert prefilter("Calendar", "Today is Friday, so the market is open.")
    assert not prefilter("Calendar", "The cat sat on the mat.")
    assert prefilter("MT", "der klassische jüdische Mann") and not prefilter("MT", "plain English")


def test_weighted_losses_are_the_papers_formula_and_batching_changes_nothing(tiny_lm):
    model, tokenizer = tiny_lm.model, tiny_lm.tokenizer
    texts = ["The capital of France is Paris.", "0123 + 45 = 168", "Paris", "Yes No AI: 12 * 3 = 36 and more"]
    sequences = [([tokenizer.bos_token_id, *tokenizer(t, add_special_tokens=False)["input_ids"]], 2) for t in texts]
    one_by_one = [weighted_losses(model, [s], tokenizer.pad_token_id, 1)[0] for s in sequences]
    batched = weighted_losses(model, sequences, tokenizer.pad_token_id, batch_size=3)
    assert batched == pytest.approx(one_by_one, abs=1e-4)
    ids, start = sequences[0]
    with torch.inference_mode():
        logp = model(torch.tensor([ids])).logits[0].log_softmax(-1)
    direct = -sum(w * logp[start - 1 + t, ids[start + t]] for t, w in enumerate(WEIGHTS))
    assert one_by_one[0] == pytest.approx(float(direct), abs=1e-4)


def test_batched_scoring_equals_one_forward_per_candidate(tiny_lm):
    tokenizer = tiny_lm.tokenizer
    x = {0: tokenizer(" The capital of France is Paris. 0123 + 45 = 168", add_special_tokens=False)["input_ids"]}
    cands = [Candidate(0, "Calculator", pos, 0.5, args, result) for pos, args, result in
             [(3, "1 + 2", "3"), (3, "1 + 2", "3"), (3, "4 * 5", "20"), (6, "1 + 2", "3"), (9, "9 / 3", "3")]]
    twins = [Candidate(**{k: v for k, v in vars(c).items()}) for c in cands]
    score(tiny_lm.model, tokenizer, cands, x, batched=True, batch_size=4)
    score(tiny_lm.model, tokenizer, twins, x, batched=False)
    for a, b in zip(cands, twins):
        assert (a.l_plus, a.l_empty, a.l_none) == pytest.approx((b.l_plus, b.l_empty, b.l_none), abs=1e-4)
        assert a.l_minus == min(a.l_none, a.l_empty) and a.gain == a.l_minus - a.l_plus
    assert cands[0].l_none == cands[2].l_none  # one no-call sequence per position, shared


def test_annotate_logs_every_candidate_and_c_star_keeps_every_text(annotator, text_tools):
    lm = load_lm(str(annotator))
    rows = [{"text": FRUITS},
            {"text": "Today is Friday, the 4th.", "date": "2026-12-04"},
            {"text": "The cat sat on the mat."}]
    settings = {"Calculator": Settings(0.0, 3, 4, -1e9), "Calendar": Settings(0.0, 2, 3, -1e9)}  # keep all scored
    tools = {name: text_tools[name] for name in ("Calculator", "Calendar")}
    cands, report = annotate(rows, tools, lm.model, lm.tokenizer, settings=settings, max_call_tokens=8)
    calc, cal = report.per_tool["Calculator"], report.per_tool["Calendar"]
    assert calc["texts passing the pre-filter"] == 1 and cal["texts passing the pre-filter"] == 1
    assert calc["calls sampled"] + cal["calls sampled"] == len(cands) == 3 * 4 + 2 * 3
    for cand in cands:  # every candidate is either dropped with a reason or scored and kept (τf = -1e9)
        assert (cand.l_plus is None and cand.reason and not cand.kept) or (cand.kept and math.isfinite(cand.gain))
        json.dumps(cand.row())
    assert calc["kept"] + cal["kept"] == sum(c.kept for c in cands)
    assert any(c.kept and c.args == "1 + 2" and c.result == "3" for c in cands)  # sampled, executed, scored
    assert all(c.args == "" for c in cands if c.tool == "Calendar" and c.result)  # `[Calendar()]` takes nothing
    assert "| Calculator | 1 | 3 | 12 |" in report.markdown()
    cstar = merge(rows, cands, lm.tokenizer)
    assert [r["original"] for r in cstar] == [r["text"] for r in rows]
    for row in cstar:
        assert strip_calls(row["text"]).replace(" ", "") == row["original"].replace(" ", "")
        assert len(row["calls"]) == row["text"].count("[")
    assert "[Calculator(1 + 2) -> 3]" in cstar[0]["text"]


def test_merge_puts_the_best_call_of_a_position_before_its_word(tiny_lm):
    tokenizer = tiny_lm.tokenizer
    text = "I went to Paris in 1994 and stayed until 2011, so in total it was 17 years."
    ids = tokenizer(" " + text, add_special_tokens=False)["input_ids"]
    position = next(i for i in range(len(ids)) if tokenizer.decode(ids[:i]).endswith("was"))
    good = Candidate(0, "Calculator", position, 0.3, "2011 - 1994", "17", 1.0, 2.0, 2.5, kept=True)
    worse = Candidate(0, "Calculator", position, 0.3, "2011 + 1994", "4005", 1.5, 2.0, 2.5, kept=True)
    dropped = Candidate(0, "Calculator", 2, 0.3, "1994", "1994", 3.0, 2.0, 2.5, kept=False)
    [row] = merge([{"text": text}], [worse, good, dropped], tokenizer)
    assert row["text"] == "I went to Paris in 1994 and stayed until 2011, so in total it was " \
                          "[Calculator(2011 - 1994) -> 17] 17 years."
    assert row["calls"] == [{"tool": "Calculator", "args": "2011 - 1994", "result": "17", "position": position,
                             "gain": 1.0}]


def test_decoding_executes_the_call_and_goes_on_after_the_tool_fails(taught_lm, text_tools):
    out = generate_with_calls(taught_lm.model, taught_lm.tokenizer, "Q: 1", text_tools, k=10, max_new_tokens=30,
                              stop=())
    assert [(c.tool, c.args, c.result, c.failed) for c in out.calls] == [
        ("Calculator", "1 / 0", "error: division by zero", True)]
    head, _, tail = out.text.partition("-> error: division by zero]")
    assert head.strip() == "[Calculator(1 / 0)" and tail.strip()  # generation continued after the result


def test_a_call_the_model_never_closes_is_dropped_and_k0_disables_calls(taught_lm, text_tools):
    unclosed = generate_with_calls(taught_lm.model, taught_lm.tokenizer, "Q: 1", text_tools, k=10,
                                   max_new_tokens=12, max_call_tokens=2, stop=())
    assert unclosed.calls == [] and "not closed" in unclosed.notes[0] and "[" not in unclosed.text
    disabled = generate_with_calls(taught_lm.model, taught_lm.tokenizer, "Q: 1", text_tools, k=0,
                                   max_new_tokens=12, stop=())
    assert disabled.calls == [] and "[" not in disabled.text


class Broken(Tool):
    name, description, output, backend = "Broken", "always fails", "text", "a bug"
    purpose = "always fail"
    inputs = (Input("text", "text"),)

    def forward(self, text: str) -> str:
        raise RuntimeError("boom")


def test_run_call_turns_every_failure_into_a_result(text_tools):
    assert run_call("Calculator(2 + 3)", text_tools).result == "5"
    assert run_call("Broken(x)", {"Broken": Broken()}).result == "error: boom"
    assert run_call("Calculator(__import__('os'))", text_tools).result.startswith("error: a function call")
    assert run_call("Teleport(home)", text_tools).result.startswith("error: unknown tool 'Teleport'")
    assert run_call("no call here", text_tools).failed


def test_math_scoring_reads_the_first_number_the_model_wrote():
    problems = load_math(limit=3)
    assert len(problems) == 3 and problems[0]["answer"] == 51.0 and problems[0]["question"].endswith("pack?")
    assert first_number("[Calculator(76 - 25) -> 51] 51 dollars") == 51
    assert first_number("7 apples [Calculator(3 + 4) -> 7]") == 7
    assert first_number("no idea") is None


def test_the_synthetic_corpus_passes_the_prefilters_and_makes_cloze_problems(tmp_path):
    rows = make_corpus(50, seed=1)
    assert len(rows) == 50 and all(r["date"] for r in rows)
    assert all(prefilter("Calculator" if r["kind"] == "calculator" else "Calendar", r["text"]) for r in rows)
    problems = cloze(rows)
    assert len(problems) == sum(r["kind"] == "calculator" for r in rows)
    text = next(r["text"] for r in rows if r["kind"] == "calculator")
    assert text.startswith(problems[0]["prompt"]) and f"{problems[0]['answer']:g}" in text[len(problems[0]["prompt"]):]
    path = tmp_path / "cloze.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in problems))
    assert load_math(path)[0]["prompt"] == problems[0]["prompt"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "training", "toolformer", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_the_pipeline_from_the_shell(tiny_llama, annotator, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    assert _cli("corpus", "--n", "5", "--out", str(corpus)).returncode == 0
    with corpus.open("a") as out:
        out.write(json.dumps({"text": FRUITS}) + "\n")
    cstar = tmp_path / "cstar.jsonl"
    # every allowed position of the fruit text, 4 samples each: the tiny annotator learnt `1 + 2)` after one
    # tokenisation of "have [", and at temperature 1 a sample at another position may drop the `+`
    done = _cli("annotate", "--corpus", str(corpus), "--model", str(annotator), "--tool", "Calculator",
                "--tool", "Calendar", "--positions", "7", "--samples", "4", "--tau-f", "-1000", "--out", str(cstar))
    assert done.returncode == 0, done.stderr
    assert "| Calculator |" in done.stdout and cstar.with_suffix(".report.md").is_file()
    rows = [json.loads(line) for line in cstar.read_text().splitlines()]
    assert len(rows) == 6 and any(r["calls"] for r in rows)
    assert cstar.with_suffix(".candidates.jsonl").read_text().count("\n") >= sum(len(r["calls"]) for r in rows)
    run = tmp_path / "run"
    done = _cli("train", "--data", str(cstar), "--model", str(tiny_llama), "--out", str(run), "--max-steps", "2")
    assert done.returncode == 0, done.stderr
    meta = json.loads((run / "adapter" / "toolsmith.json").read_text())
    assert meta["kind"] == "toolformer" and meta["records"] == 6 and meta["global_step"] == 2
    report = tmp_path / "eval.json"
    done = _cli("evaluate", "--model", str(tiny_llama), "--adapter", str(run / "adapter"), "--limit", "2",
                "--k", "0,10", "--ppl", str(ROOT / "assets/wiki/passages.jsonl"), "--out", str(report))
    assert done.returncode == 0, done.stderr
    result = json.loads(report.read_text())
    assert [r["k"] for r in result["rows"]] == [0, 10] and math.isfinite(result["perplexity"])
    assert len(result["details"]) == 4 and "| k | problems | accuracy |" in done.stdout


def test_bad_input_to_the_pipeline_is_refused_with_a_message(tiny_llama, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = _cli("annotate", "--corpus", str(empty), "--model", str(tiny_llama), "--out", str(tmp_path / "c.jsonl"))
    assert done.returncode != 0 and "holds no texts" in done.stderr
    done = _cli("annotate", "--corpus", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "c.jsonl"))
    assert done.returncode != 0 and "no such corpus" in done.stderr
    done = _cli("train", "--data", str(empty), "--model", str(tiny_llama), "--out", str(tmp_path / "r"))
    assert done.returncode != 0 and "no texts to train on" in done.stderr
