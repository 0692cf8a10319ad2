"""The multi-turn evaluation: each turn scored through the chat's own session and agent, repeats counted."""
import json

from scripted import ScriptedController, last_image

from agent.loop import Agent
from agent.shortlist import SHIPPED_RETRIEVER, load_shortlist
from training.evaluation.conversations import evaluate_conversations, load_conversations, summary
from visual_tools import ToolRegistry

CONVERSATION = {"id": "t", "turns": [
    {"upload": "assets/chelsea.png"},
    {"input": "edges of the cat please", "kind": "edge", "gold": [{"tool": "Edge Detection On Image",
                                                                   "args": ["$upload1"]}]},
    {"input": "what is 48 times 12", "kind": "calc", "gold": [{"tool": "Calculator", "args": ["48*12"]}],
     "answer": ["576"]},
    {"input": "draw me a dragon over a castle", "kind": "unavailable",
     "gold": [{"tool": "Generate Image From User Input Text", "args": ["a dragon over a castle"]}]},
    {"input": "thanks", "kind": "notool", "gold": []}]}


def replies():
    return [lambda p: f"Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\nAction Input: "
                      f"{last_image(p)}",
            "Thought: Do I need to use a tool? No\nAI: done",
            "Thought: Do I need to use a tool? Yes\nAction: Calculator\nAction Input: 48 * 12",
            "Thought: Do I need to use a tool? No\nAI: It is 576.",
            # the dragon is answered before the model is asked; "thanks" copies the calculator's answer twice
            "Thought: Do I need to use a tool? No\nAI: It is 576.",
            "Thought: Do I need to use a tool? No\nAI: It is 576."]


def test_each_turn_is_scored_and_repeats_and_missing_tools_are_counted(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CONVERSATION) + "\n")
    registry = ToolRegistry.from_load("Image2Canny_cpu,Calculator_cpu,Text2Image_cpu")
    shortlist, _ = load_shortlist(5, SHIPPED_RETRIEVER, registry.all())
    controller = ScriptedController(replies())
    results = evaluate_conversations(load_conversations(path), lambda: Agent(controller, registry,
                                                                             shortlist=shortlist), registry)
    edge, calc, dragon, thanks = results
    assert [r.turn for r in results] == [1, 2, 3, 4]
    assert edge.success and edge.strict and edge.answer.startswith("Here is the edge map: image/")
    assert calc.success and calc.strict and calc.calls == ["Calculator: 48 * 12"]  # worth 48*12: right
    assert dragon.unavailable and dragon.missing == "Generate Image From User Input Text" and dragon.success
    assert thanks.repeated and thanks.success  # no tool was right, but the answer was copied (after one retry)
    table = summary(results)
    assert "| turns ≥ 2 | 3 | 100.0 | 100.0 | 1 |" in table
    assert "Unavailable tool: 1 of 1 answered with what is needed; 0 false alarms on the other 3 turns" in table
