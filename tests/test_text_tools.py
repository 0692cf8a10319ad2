"""Toolformer's text tools as agent tools: the safe Calculator, Calendar, BM25 WikiSearch, QA and MT backends."""
from __future__ import annotations

import json
from datetime import date

import pytest
from scripted import ScriptedController
from tiny_models import build_tiny_bert_qa, build_tiny_m2m100

from agent.events import ObservationEvent
from agent.loop import Agent
from visual_tools import TEXT_TOOL_CLASSES, ToolInputError, ToolRegistry, parse_load
from visual_tools.text_tools import MT, QA, Calculator, Calendar, WikiSearch, calculate, detect_language, read_rows


@pytest.mark.parametrize("expression, value", [
    ("18 + 12 * 3", "54"), ("400 / 1400", "0.29"), ("(2 + 3) ** 2", "25"), ("-7 + 2", "-5"),
    ("658,893 / 11.4", "57797.63"), ("12 × 3 ÷ 4", "9"), ("2 ** 0.5", "1.41")])
def test_calculator_computes_and_rounds_to_two_places(expression, value):
    assert calculate(expression) == value


@pytest.mark.parametrize("expression, message", [
    ("1 / 0", "division by zero"), ("9**9**9", "too large"), ("10 ** 400", "too large"),
    ("x + 1", "the name 'x' is not allowed"), ("(1).real", "attribute access is not allowed"),
    ("__import__('os').system('echo hacked')", "function call is not allowed"),
    ("[1, 2]", "List is not allowed"), ("'a' * 3", "Constant is not allowed"), ("1 +", "not an arithmetic"),
    ("(" * 150 + "1" + ")" * 150, "longer than 200"), ("True + 1", "Constant is not allowed")])
def test_calculator_refuses_anything_but_arithmetic_without_running_it(expression, message, tmp_path,
                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ToolInputError, match=message):
        Calculator()(expression=expression)
    assert not list(tmp_path.iterdir())  # nothing was executed


def test_calendar_states_the_date_in_the_papers_words():
    tool = Calendar()
    tool.today = lambda: date(2026, 12, 2)
    assert tool(**tool.parse_input("")) == "Today is Wednesday, December 2, 2026."
    assert tool(**tool.parse_input("what day is it")) == "Today is Wednesday, December 2, 2026."  # words: today


def test_calendar_gives_the_weekday_of_a_date_in_the_ways_people_write_it():
    tool = Calendar()
    tool.today = lambda: date(2026, 12, 2)
    for written in ("2027-03-14", "March 14, 2027", "14 Mar 2027", "'2027-03-14'"):
        assert tool(**tool.parse_input(written)) == "2027-03-14 is a Sunday.", written
    assert tool(**tool.parse_input("July 4")) == "2026-07-04 is a Saturday."  # no year: this year's
    with pytest.raises(ToolInputError, match="such as 2027-03-14"):
        tool(**tool.parse_input("2027-13-45"))
    assert tool.function_doc()["parameters"]["required"] == []  # the date is optional in BFCL's schema too


def test_wikisearch_finds_the_passage_in_the_shipped_corpus_and_a_users_folder(tmp_path):
    tool = WikiSearch()
    assert tool.availability() == (True, "")
    assert "Gustave Eiffel" in tool(query="who designed the Eiffel Tower")
    assert tool(query="the of and") == "No passage matches 'the of and'."
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("Zorblax is a purple planet.\n\nQuuxland exports cheese and tin.")
    (folder / "b.jsonl").write_text(json.dumps({"text": "Flibber rivers flow north."}) + "\n")
    mine = WikiSearch(checkpoint=str(folder))
    assert mine(query="what does Quuxland export") == "Quuxland exports cheese and tin."
    assert len(read_rows(folder)) == 3


def test_wikisearch_without_a_corpus_is_unavailable_and_an_empty_one_is_refused(tmp_path, monkeypatch):
    missing = WikiSearch(checkpoint=str(tmp_path / "nowhere.jsonl"))
    ok, reason = missing.availability()
    assert not ok and "does not exist" in reason and "TOOLSMITH_WIKISEARCH_CHECKPOINT" in reason
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ToolInputError, match="holds no passages"):
        WikiSearch(checkpoint=str(empty))(query="anything")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "no text field"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_rows(bad)


def test_qa_answers_with_a_span_of_the_top_passage(tmp_path):
    registry = ToolRegistry([WikiSearch(), QA(checkpoint=str(build_tiny_bert_qa(tmp_path / "qa")))])
    qa = registry.get("QA")
    answer = qa(question="Who designed the Eiffel Tower?")
    passage = registry.get("WikiSearch").search("Who designed the Eiffel Tower?")[0]
    assert answer and answer in passage  # extractive: a span of the passage, whatever the random weights pick


def test_qa_and_mt_say_what_they_need_without_weights():
    for cls in (QA, MT):
        ok, reason = ToolRegistry([WikiSearch(), cls()]).by_class(cls.__name__).availability()
        assert not ok and f"python -m visual_tools fetch {cls.__name__}" in reason


def test_mt_detects_the_language_and_translates_through_the_seq2seq_model(tmp_path):
    tool = MT(checkpoint=str(build_tiny_m2m100(tmp_path / "mt")))
    assert detect_language("der klassische jüdische Mann ist hier") == "de"
    out = tool(text="der klassische jüdische Mann ist hier")
    assert isinstance(out, str) and "eng_Latn" not in out  # the forced language token is not shown
    assert tool(text="This sentence is already in English.") == "This sentence is already in English."


def test_the_agent_is_offered_the_text_tools_and_calls_the_calculator(store):
    assert set(TEXT_TOOL_CLASSES) <= set(parse_load(None))
    registry = ToolRegistry.from_load("Calculator_cpu,Calendar_cpu,WikiSearch_cpu")
    controller = ScriptedController(["Thought: Do I need to use a tool? Yes\nAction: Calculator\n"
                                     "Action Input: 723 / 252\n",
                                     "Thought: Do I need to use a tool? No\nAI: It is 2.87 goals per match."])
    events = list(Agent(controller, registry).run("What is 723 / 252?", [], store))
    observation = next(e for e in events if isinstance(e, ObservationEvent))
    assert observation.text == "2.87" and not observation.error
    assert "Calculator: useful when you need to compute" in controller.prompts[0]


def test_the_agent_calls_the_calendar_with_and_without_a_date(store):
    registry = ToolRegistry.from_load("Calendar_cpu")
    for action_input, expected in (("", "Today is "), ("2027-03-14", "2027-03-14 is a Sunday.")):
        controller = ScriptedController([f"Thought: Do I need to use a tool? Yes\nAction: Calendar\n"
                                         f"Action Input: {action_input}\n",
                                         "Thought: Do I need to use a tool? No\nAI: Done."])
        events = list(Agent(controller, registry).run("What day is it?", [], store))
        observation = next(e for e in events if isinstance(e, ObservationEvent))
        assert observation.text.startswith(expected) and not observation.error, observation.text
