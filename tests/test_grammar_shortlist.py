"""Replies that cannot go wrong in form: every grammar the app builds parses on llama.cpp and llguidance, each engine
decodes under it, and the shortlist offers each turn the likeliest tools (or says why it ranks by BM25)."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import llguidance
import numpy as np
import pytest
from conftest import python_output
from scripted import ScriptedController

from agent.embedded import load_embedded
from agent.grammar import FREE_AFTER, Grammar, build_grammar
from agent.hf_controller import TransformersController
from agent.llama_cpp_controller import compile_gbnf
from agent.parsing import Final, parse_step
from agent.prompts import STOP, Turn, image_turn, render_prompt
from agent.retriever import BM25Retriever, ClassifierRetriever
from agent.shortlist import SHIPPED_RETRIEVER, Shortlist, load_shortlist
from training.data.generate import build_dataset, reoffer
from training.data.mix import category
from training.data.records import load_jsonl
from training.data.render import conversation
from training.data.teachers import TemplateTeacher
from visual_tools import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
REGISTRY = ToolRegistry.from_load(None)
ODD = ["image/1a2b3c4d.png", 'image/we"ird \\ name.png', "image/фото 写真 🐱.png", "image/tab\there.png"]
TOOL_SETS = {"one": REGISTRY.all()[:1], "available": REGISTRY.available(), "all 36": REGISTRY.all()}


@pytest.fixture(scope="module")
def engine():
    return load_embedded()


@pytest.mark.parametrize("tools", TOOL_SETS.values(), ids=TOOL_SETS.keys())
@pytest.mark.parametrize("images", [[], ODD[:1], ODD], ids=["no image", "one image", "odd names"])
def test_every_grammar_the_app_can_build_parses(engine, tools, images):
    grammar = build_grammar(tools, images)
    for text in (grammar.gbnf, grammar.whole):
        assert compile_gbnf(engine.llm, text) is not None
        assert llguidance.LLMatcher.validate_grammar(llguidance.grammar_from("gbnf", text)) == ""


def test_without_images_no_tool_that_needs_one_can_be_called():
    grammar = build_grammar(REGISTRY.available(), [])
    assert "Edge Detection On Image" not in grammar.gbnf and '"Calculator\\nAction Input: "' in grammar.gbnf
    only_images = build_grammar(REGISTRY.all()[:1], [])  # the captioning tool alone: answering is all that is left
    assert "call" not in only_images.gbnf and FREE_AFTER.replace("\n", "\\n") in only_images.gbnf


def test_a_grammar_llama_cpp_cannot_parse_runs_unconstrained_instead_of_crashing(engine, caplog):
    assert compile_gbnf(engine.llm, "root ::= undefined") is None
    reply = engine.generate("Say hi.", max_new_tokens=4, grammar=Grammar("root ::= undefined"))
    assert isinstance(reply[0], str) and "cannot parse the step grammar" in caplog.text


def test_llama_cpp_can_only_call_an_offered_tool_with_a_box_and_an_existing_image(engine):
    crop = [REGISTRY.tools["Crop Image"]]
    prompt = render_prompt(crop, [image_turn("image/1a2b3c4d.png", None)], "Detect the edges of this image.")
    reply = engine.generate(prompt, stop=STOP, max_new_tokens=60, grammar=build_grammar(crop, ["image/1a2b3c4d.png"]))
    parsed = parse_step(reply[0])
    assert isinstance(parsed, Final) or (
        parsed.tool == "Crop Image" and re.fullmatch(r"image/1a2b3c4d\.png, \[ ?[\d.-]+(, ?[\d.-]+){3} ?\]",
                                                     parsed.tool_input))
    streamed = "".join(engine.stream(prompt, stop=STOP, max_new_tokens=60,
                                     grammar=build_grammar(crop, ["image/1a2b3c4d.png"])))
    assert streamed == reply[0]


def test_llama_cpp_answers_run_on_past_the_grammar(engine):
    prompt = render_prompt([], [], "hello! how are you today?")
    reply = engine.generate(prompt, stop=STOP, max_new_tokens=40, grammar=build_grammar([], []))[0]
    assert reply.startswith("Thought: Do I need to use a tool? No\nAI:") and len(reply) > len(
        "Thought: Do I need to use a tool? No\nAI:") + 2


def test_a_tiny_transformers_model_decodes_under_the_grammar(tiny_llama):
    controller = TransformersController.from_pretrained(str(tiny_llama))
    tools = [REGISTRY.tools["Edge Detection On Image"], REGISTRY.tools["Crop Image"]]
    prompt = render_prompt(tools, [image_turn("image/1a2b3c4d.png", None)], "Detect the edges of this image.")
    grammar = build_grammar(tools, ["image/1a2b3c4d.png"])
    free = controller.generate(prompt, max_new_tokens=30)[0]
    assert not free.startswith("Thought: Do I need to use a tool?")  # random weights: anything at all
    for _ in range(3):
        reply = controller.generate(prompt, max_new_tokens=150, temperature=1.0, grammar=grammar)[0]
        assert re.match(r"Thought: Do I need to use a tool\? (Yes\nAction: (Edge Detection On Image\nAction Input: "
                        r"image/1a2b3c4d\.png\n|Crop Image\nAction Input: image/1a2b3c4d\.png, \[ ?-?\d+(\.\d+)?"
                        r"(, ?-?\d+(\.\d+)?){3} ?\]\n)$|No\nAI:)", reply), reply
    assert "".join(controller.stream(prompt, max_new_tokens=150, grammar=grammar)) == controller.generate(
        prompt, max_new_tokens=150, grammar=grammar)[0]


# --- the shortlist ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shortlist():
    return Shortlist(ClassifierRetriever.load(SHIPPED_RETRIEVER, list(REGISTRY.tools)))


def test_the_shortlist_offers_the_tools_a_request_needs_most_likely_first(shortlist):
    names = list(REGISTRY.tools)
    assert shortlist.retriever.multilabel  # the shipped classifier: one sigmoid per tool
    assert shortlist.offer("can you outline the cat? only the outlines", names)[0] == "Edge Detection On Image"
    both = shortlist.offer("make it bigger first and then find the faces", names)
    assert {"Super Resolution On Image", "Face Detection On Image"} <= set(both) and len(both) <= shortlist.k
    assert both == shortlist.rank("make it bigger first and then find the faces", names)[:len(both)]  # ranked
    assert shortlist.offer("what is 12 times 7?", names) == ["Calculator"]  # one tool is likely: one is offered


def test_a_follow_up_keeps_the_previous_request_in_view(shortlist):
    history = [image_turn("image/1a2b3c4d.png", None), Turn("read the text on this sign", "It says STOP.")]
    assert "Text Detection On Image" in shortlist.offer("and again on the other one", list(REGISTRY.tools), history)
    assert len(shortlist.offer("and again on the other one", list(REGISTRY.tools), history, k=3)) == 3


def test_a_greeting_gets_one_tool_and_no_threshold_offers_k(shortlist):
    tools = REGISTRY.available()
    assert len(shortlist.pick("hi there!", [], tools)) == 1  # none is likely: the likeliest alone, never none
    every = Shortlist(shortlist.retriever, k=99, threshold=0.0).pick("hi there!", [], tools)
    assert [t.name for t in every] == shortlist.rank("hi there!", [t.name for t in tools])  # all, ranked
    assert load_shortlist(0, SHIPPED_RETRIEVER, tools) == (None, "")  # --shortlist 0: every tool, as today


class Fixed:
    """A retriever with set probabilities, whatever the text."""

    name, probabilities = "fixed", True

    def __init__(self, scores: dict[str, float]):
        self.fixed = scores

    def scores(self, texts):
        return [self.fixed for _ in texts]


def test_offer_is_ranked_above_the_threshold_at_least_one_at_most_k_and_must_included():
    names = list("abcdefg")
    retriever = Fixed(dict(zip(names, [0.1, 0.9, 0.5, 0.01, 0.3, 0.2, 0.06])))
    assert Shortlist(retriever, k=5, threshold=0.25).offer("x", names) == ["b", "c", "e"]
    assert Shortlist(retriever, k=5, threshold=0.05).offer("x", names) == ["b", "c", "e", "f", "a"]  # at most k
    assert Shortlist(retriever, k=5, threshold=0.95).offer("x", names) == ["b"]  # at least one
    assert Shortlist(retriever, k=5, threshold=0.25).offer("x", names, must=["d"]) == ["b", "c", "e", "d"]
    assert Shortlist(retriever, k=5, threshold=0.05).offer("x", names, must=["d", "z"]) == ["b", "c", "e", "f", "d"]
    assert Shortlist(retriever, k=5, threshold=0.95).offer("x", names, must=["d"]) == ["b", "d"]
    assert Shortlist(retriever, k=5, threshold=0.95).offer("x", names, must=["d"], k=3) == ["b", "c", "d"]
    assert Shortlist(retriever, k=5, threshold=0.95).offer("x", names[:2], k=3) == ["b", "a"]  # fewer names
    retriever.probabilities = False  # BM25's scores: no threshold, the top k
    assert Shortlist(retriever, k=3, threshold=0.95).offer("x", names) == ["b", "c", "e"]
    tools = [REGISTRY.tools[n] for n in ("Crop Image", "Calculator", "Calendar")]
    ranked = Shortlist(Fixed({"Crop Image": 0.2, "Calculator": 0.9, "Calendar": 0.01})).pick("x", [], tools)
    assert [t.name for t in ranked] == ["Calculator", "Crop Image"]


def test_a_multilabel_classifier_offers_both_tools_of_a_chain_and_an_old_softmax_file_still_loads(tmp_path):
    from training.data.records import GoldStep, Record, Source
    from training.tuning.retriever import train_retriever
    small = ToolRegistry.from_load("Image2Canny_cpu,Image2Line_cpu,SuperResolution_cpu,FaceDetection_cpu,"
                                   "Calculator_cpu")

    def record(text: str, *tools: str) -> Record:
        return Record(id=text, tools=list(small.tools), instruction=text, source=Source(teacher="test"),
                      steps=[GoldStep(tool=t, args=["image/a.png"]) for t in tools],
                      kind="positive" if tools else "negative")

    records = [record("detect the edges of this photo", "Edge Detection On Image"),
               record("make this picture bigger", "Super Resolution On Image"),
               record("find the faces in the picture", "Face Detection On Image"),
               record("upscale the photo, then find the faces in it", "Super Resolution On Image",
                      "Face Detection On Image"),
               record("thanks, that's great")]  # no tool: a row with no label
    retriever = train_retriever(records, small, tmp_path / "multi")
    config = json.loads((tmp_path / "multi" / "retriever.json").read_text())
    assert config["multilabel"] and config["no_tool_examples"] == 1 and retriever.coef.shape == (5, 384)
    loaded = ClassifierRetriever.load(tmp_path / "multi", list(small.tools))
    assert loaded.multilabel and np.allclose(loaded.coef, retriever.coef)
    offered = Shortlist(loaded).offer("enlarge the image and after that detect the faces", list(small.tools))
    assert sorted(offered) == ["Face Detection On Image", "Super Resolution On Image"]
    probabilities = loaded.scores(["enlarge the image and after that detect the faces"])[0]
    assert sum(probabilities.values()) > 1.2  # independent sigmoids: both tools likely at once

    old = ClassifierRetriever(list(small.tools), np.random.default_rng(0).normal(size=(5, 384)), np.zeros(5))
    old.save(tmp_path / "old", {})
    config = json.loads((tmp_path / "old" / "retriever.json").read_text())
    del config["multilabel"]  # files written before the multi-label classifier have no such key
    (tmp_path / "old" / "retriever.json").write_text(json.dumps(config))
    softmax = ClassifierRetriever.load(tmp_path / "old", list(small.tools))
    assert not softmax.multilabel and sum(softmax.scores(["detect the edges"])[0].values()) == pytest.approx(1.0)
    assert len(Shortlist(softmax).offer("detect the edges", list(small.tools))) >= 1


def test_training_data_offers_what_the_chat_would_and_a_mix_takes_each_category(shortlist, tmp_path):
    offline = ToolRegistry.from_load("Image2Canny_cpu,Image2Line_cpu,SuperResolution_cpu,FaceDetection_cpu,"
                                     "Calculator_cpu")
    out = tmp_path / "data.jsonl"
    build_dataset(ASSETS, TemplateTeacher(), offline, out, n=80, per_call=20, offer=(3, 5), seed=1,
                  shortlist=shortlist)
    records = load_jsonl(out).records
    chains = [r for r in records if len(r.used_tools()) == 2]
    assert chains and all(set(r.used_tools()) <= set(r.tools) and 2 <= len(r.tools) <= 5 for r in records)
    for r in records[:40]:  # the list the chat would offer these words, over the tools here or over all 36
        pools = ([t.name for t in REGISTRY.available()], list(REGISTRY.tools))
        assert r.tools in [shortlist.offer(r.instruction, pool, conversation(r), must=r.used_tools(),
                                           k=len(r.tools)) for pool in pools]
    assert {n for r in records for n in r.tools} - set(offline.tools)  # others than the asked ones are offered
    for r in reoffer(records[:20], REGISTRY, shortlist, 0):  # --offer 0: sized as the chat's, the gold among them
        gold = r.used_tools()
        assert set(gold) <= set(r.tools) and r.tools in [
            shortlist.offer(r.instruction, pool + [n for n in gold if n not in pool], conversation(r), must=gold)
            for pool in ([t.name for t in REGISTRY.available()], list(REGISTRY.tools))]
    mixed = tmp_path / "mix.jsonl"
    done = subprocess.run([sys.executable, "-m", "training", "mix", "--data", str(out), "--out", str(mixed),
                           "--take", "two-step, continued=3", "--take", "no tool=2", "--take", "Calendar=1"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and "fewer 'Calendar' records" in done.stderr  # no Calendar instructions asked
    taken = load_jsonl(mixed).records
    assert [category(r) for r in taken] == ["two-step, continued"] * 3 + ["no tool"] * 2
    assert all(r.given_steps == 1 and len(r.steps) == 2 for r in taken[:3])


def test_a_classifier_for_another_tool_set_or_none_is_refused_with_its_path(tmp_path, shortlist):
    other = tmp_path / "retriever"
    shutil.copytree(SHIPPED_RETRIEVER, other)
    config = json.loads((other / "retriever.json").read_text())
    config["classes"].remove("Crop Image")
    (other / "retriever.json").write_text(json.dumps(config))
    chosen, note = load_shortlist(5, other, REGISTRY.all())
    assert isinstance(chosen.retriever, BM25Retriever) and str(other) in note and "Crop Image" in note
    chosen, note = load_shortlist(5, tmp_path / "missing", REGISTRY.all())
    assert isinstance(chosen.retriever, BM25Retriever) and str(tmp_path / "missing") in note
    assert "Edge Detection On Image" in chosen.offer("detect the edges", list(REGISTRY.tools))
    assert len(chosen.offer("detect the edges", list(REGISTRY.tools))) == chosen.k  # BM25: no threshold, top k


def test_an_image_deleted_mid_turn_leaves_the_next_steps_grammar(box_image):
    from agent.loop import Agent
    from agent.session import ChatSession
    from visual_tools.canny import Image2Canny

    session, registry = ChatSession(), ToolRegistry([Image2Canny()])
    name = session.add_image(box_image, registry)

    def delete_then_call(prompt: str) -> str:
        session.store.resolve(name).unlink()
        return f"Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\nAction Input: {name}"

    controller = ScriptedController([delete_then_call, "Thought: Do I need to use a tool? No\nAI: it is gone"])
    events = list(session.send(Agent(controller, registry), "detect the edges"))
    assert "no image named" in next(e.text for e in events if type(e).__name__ == "ObservationEvent")
    first, second = controller.grammars[:2]
    assert name in first.gbnf and "Edge Detection On Image" in first.gbnf
    assert name not in second.gbnf and "Edge Detection On Image" not in second.gbnf  # no image left to call it on


def test_the_app_warms_the_shortlist_up_before_the_first_message():
    """`ChatServices.warm_up` (run in a thread at launch) loads the default controller's classifier and its sentence
    encoder, which the first message would otherwise wait for; the controller itself is not loaded by it."""
    code = ("from agent import retriever; from agent.chat_ui import ChatServices, _shortlist; "
            "from agent.pool import ControllerPool; from visual_tools import ToolRegistry; "
            "pool = ControllerPool(); ChatServices(ToolRegistry.from_load('Image2Canny_cpu'), pool).warm_up(); "
            "print(retriever.encoder.cache_info().currsize, _shortlist.cache_info().currsize, len(pool._loaded))")
    assert python_output(code).split() == ["1", "1", "0"]


def test_a_request_for_a_tool_without_weights_is_answered_with_what_it_needs(box_image):
    from agent.events import AnswerEvent, MissingToolEvent
    from agent.loop import Agent
    from agent.session import ChatSession
    registry = ToolRegistry.from_load("Image2Canny_cpu,Calculator_cpu,Text2Image_cpu,VisualQuestionAnswering_cpu")
    shortlist, _ = load_shortlist(5, SHIPPED_RETRIEVER, registry.all())
    available = [t.name for t in registry.available()]
    assert available == ["Edge Detection On Image", "Calculator"]
    assert shortlist.missing("paint me a brand-new picture of a castle at sunset", available) == \
        "Generate Image From User Input Text"
    for fine in ("detect the edges of this photo", "what is 19 * 29?", "thanks, bye!", "hi there"):
        assert shortlist.missing(fine, available) is None
    controller = ScriptedController(["Thought: Do I need to use a tool? No\nAI: A castle."])  # never asked
    session = ChatSession()
    session.add_image(box_image, registry)
    events = list(session.send(Agent(controller, registry, shortlist=shortlist), "draw me a dragon over a castle"))
    missing = next(e for e in events if isinstance(e, MissingToolEvent))
    assert missing.tool == "Generate Image From User Input Text" and "fetch Text2Image" in missing.reason
    assert isinstance(events[-1], AnswerEvent) and events[-1].text == missing.text == session.history[-1].ai
    assert missing.text.startswith("I can't do that here") and not controller.prompts


def test_a_turn_no_tool_is_likely_for_is_answered_directly(box_image):
    from agent.events import OfferEvent
    from agent.loop import Agent
    from agent.session import ChatSession
    registry = ToolRegistry.from_load("Image2Canny_cpu,Calculator_cpu")
    shortlist, _ = load_shortlist(5, SHIPPED_RETRIEVER, registry.all())
    available = [t.name for t in registry.available()]
    for chat in ("thanks a lot!", "good night", "hi there"):
        assert shortlist.needs_none(chat, available)
    for request in ("detect the edges of this photo", "what is 19 * 29?", "edges"):
        assert not shortlist.needs_none(request, available)
    controller = ScriptedController(["Thought: Do I need to use a tool? No\nAI: You're welcome!"])
    session = ChatSession()
    session.add_image(box_image, registry)
    events = list(session.send(Agent(controller, registry, shortlist=shortlist), "thanks a lot!"))
    offer = next(e for e in events if isinstance(e, OfferEvent))
    assert offer.direct and offer.tools  # the prompt still lists the likeliest tool; the grammar allows no call
    assert "Action:" not in controller.grammars[0].gbnf and "No\\nAI:" in controller.grammars[0].gbnf
