import re

import pytest

from agent.controller import ControllerError, PromptTooLong
from agent.events import (AnswerEvent, ErrorEvent, ObservationEvent, OfferEvent, ThoughtEvent, ToolCallEvent)
from agent.loop import Agent
from agent.session import ChatSession
from scripted import ScriptedController, canny_then_answer, last_image
from visual_tools import Input, Tool, ToolRegistry
from visual_tools.canny import Image2Canny

CALL = "Thought: Do I need to use a tool? Yes\nAction: {tool}\nAction Input: {arg}"
ANSWER = "Thought: Do I need to use a tool? No\nAI: done"


def run(replies, box_image, tools=None, max_steps=5):
    registry = ToolRegistry(tools or [Image2Canny()])
    controller = ScriptedController(replies)
    session = ChatSession()
    name = session.add_image(box_image, registry)
    events = [e for e in session.send(Agent(controller, registry, max_steps=max_steps), "detect the edges")
              if not type(e).__name__ == "DraftEvent"]
    return events, controller, session, name


def test_canny_episode(box_image):
    events, controller, session, name = run(canny_then_answer(), box_image)
    kinds = [type(e) for e in events]
    assert kinds == [OfferEvent, ThoughtEvent, ToolCallEvent, ObservationEvent, ThoughtEvent, AnswerEvent]
    obs = events[3]
    assert not obs.error and obs.tool == "Edge Detection On Image"
    assert re.fullmatch(rf"image/[0-9a-f]{{8}}_edge_{name[6:14]}_{name[6:14]}\.png", obs.image)
    assert session.store.resolve(obs.image).is_file()
    assert events[-1].images == [obs.image]
    # the second prompt holds the first step and its observation; the history records the turn
    assert f"Action Input: {name}\nObservation: {obs.image}\n" in controller.prompts[1]
    assert session.history[-1].human == "detect the edges" and obs.image in session.history[-1].ai


@pytest.mark.parametrize("reply, message", [
    (CALL.format(tool="Edge Detector", arg="x"), "'Edge Detector' is not a valid tool"),
    (CALL.format(tool="Edge Detection On Image", arg="../../etc/passwd"), "outside this session"),
    (CALL.format(tool="Edge Detection On Image", arg="/etc/passwd"), "outside this session"),
    (CALL.format(tool="Edge Detection On Image", arg="image/00000000.png"), "no image named"),
    ("I would like to see the edges.", "Could not parse your last output"),
])
def test_errors_become_observations_and_the_agent_recovers(box_image, reply, message):
    events, controller, _, _ = run([reply, ANSWER], box_image)
    errors = [e for e in events if isinstance(e, ObservationEvent)]
    assert len(errors) == 1 and errors[0].error and message in errors[0].text
    assert f"Observation: {errors[0].text}" in controller.prompts[1]
    assert isinstance(events[-1], AnswerEvent) and events[-1].text == "done"


class Exploding(Tool):
    name, description, output = "Explode", "always fails", "text"
    purpose = "always fails"
    inputs = (Input("image_path", "image_path"),)

    def forward(self, image_path):
        raise RuntimeError("CUDA out of memory")


def test_a_tool_that_raises_is_an_observation(box_image):
    events, _, _, _ = run([lambda p: CALL.format(tool="Explode", arg=last_image(p)), ANSWER], box_image,
                          tools=[Exploding()])
    obs = next(e for e in events if isinstance(e, ObservationEvent))
    assert obs.error and "Explode failed: RuntimeError: CUDA out of memory" in obs.text
    assert isinstance(events[-1], AnswerEvent)


def test_max_steps_stops_the_turn(box_image):
    events, controller, session, _ = run(["gibberish"], box_image, max_steps=3)
    assert len(controller.prompts) == 3 and isinstance(events[-1], ErrorEvent)
    assert "iteration limit" in events[-1].message and "iteration limit" in session.history[-1].ai


class Reader(Tool):
    name, description, output = "Read Text", "reads the text in an image", "text"
    purpose = "reads the text in an image"
    inputs = (Input("image_path", "image_path"),)

    def forward(self, image_path):
        return "Found 3 text line(s): OPEN 24 HOURS; Main St. Pharmacy; EXIT"


def test_a_looping_final_answer_is_trimmed_in_the_chat_and_in_the_history(box_image):
    echo = "The text in the image reads: OPEN 24 HOURS; Main St. Pharmacy; EXIT"
    looping = "Thought: Do I need to use a tool? No\nAI: " + f"{echo} " * 3 + "The text in"
    events, controller, session, _ = run([lambda p: CALL.format(tool="Read Text", arg=last_image(p)), looping],
                                         box_image, tools=[Reader()])
    assert isinstance(events[-1], AnswerEvent) and events[-1].text == echo
    assert session.history[-1].ai == echo  # the next turn's prompt does not carry the loop on


class Unreachable(ScriptedController):
    def stream(self, prompt, **kwargs):
        raise ControllerError("cannot reach the controller at http://127.0.0.1:9")
        yield


def test_controller_failure_is_an_error_event(box_image):
    session, registry = ChatSession(), ToolRegistry([Image2Canny()])
    events = list(session.send(Agent(Unreachable([]), registry), "hi"))
    assert [type(e) for e in events] == [OfferEvent, ErrorEvent] and "cannot reach" in events[1].message


def test_history_window_moves_in_half_windows():
    from agent.history import recent
    from agent.prompts import Turn
    history = [Turn(str(i), "") for i in range(20)]
    starts = [int(recent(history[:n], 6)[0].human) for n in range(7, 20)]
    assert all(1 <= n - s <= 6 for n, s in zip(range(7, 20), starts))  # never more than 6 turns
    assert len(set(starts)) < len(starts) / 2  # the start stays put for several turns
    assert recent(history[:4], 6) == history[:4]


class Flaky(Tool):
    """Loads a 'model' in setup; its first call fails like an out-of-memory error."""
    name, description, output = "Flaky", "fails once", "text"
    purpose = "fails once"
    inputs = (Input("image_path", "image_path"),)
    loads = 0

    def setup(self):
        type(self).loads += 1
        self.model = object()

    def forward(self, image_path):
        if self.loads == 1:
            raise RuntimeError("CUDA out of memory")
        return "ok"


def test_a_failing_tool_is_unloaded_and_reloads(box_image):
    tool = Flaky()
    events, _, _, _ = run([lambda p: CALL.format(tool="Flaky", arg=last_image(p))] * 2 + [ANSWER], box_image,
                          tools=[tool])
    observations = [e for e in events if isinstance(e, ObservationEvent)]
    assert observations[0].error and "CUDA out of memory" in observations[0].text
    assert not observations[1].error and observations[1].text == "ok"
    assert Flaky.loads == 2 and tool.model is not None


def test_a_turn_cut_short_is_still_recorded(box_image):
    session, registry = ChatSession(), ToolRegistry([Image2Canny()])
    session.add_image(box_image, registry)
    turn = session.send(Agent(ScriptedController(canny_then_answer()), registry), "edges")
    next(turn)  # the UI stops listening after the first event
    turn.close()
    assert session.history[-1].human == "edges"


class SmallContext(ScriptedController):
    """Refuses prompts over `limit` characters, as an engine with a small context does."""

    def __init__(self, replies, limit: int):
        super().__init__(replies)
        self.limit = limit

    def stream(self, prompt: str, **kwargs):
        if len(prompt) > self.limit:
            raise PromptTooLong(f"{len(prompt)} characters")
        yield from super().stream(prompt, **kwargs)


def test_a_prompt_too_long_for_the_context_drops_the_oldest_turns_first(box_image):
    from agent.prompts import Turn, render_prompt
    registry, session = ToolRegistry([Image2Canny()]), ChatSession()
    session.add_image(box_image, registry)
    session.history = [Turn(f"old question {i} " * 30, f"old answer {i} " * 30) for i in range(4)] + session.history
    from agent.history import prompt_history
    fits = len(render_prompt(registry.available(), prompt_history(session.history[2:], 10), "detect the edges")) + 300
    controller = SmallContext(canny_then_answer(), fits)
    events = list(session.send(Agent(controller, registry, history_turns=10), "detect the edges"))
    assert isinstance(events[-1], AnswerEvent)
    assert "old question 1" not in controller.prompts[0] and "old question 3" in controller.prompts[0]
    assert "Provide an image named" in controller.prompts[0]  # the newest turns stay
    hopeless = SmallContext([ANSWER], 10)
    events = list(ChatSession().send(Agent(hopeless, registry), "hi"))
    assert isinstance(events[-1], ErrorEvent) and "characters" in events[-1].message


def test_an_answer_that_misses_the_tools_result_is_replaced_by_its_report(box_image):
    from visual_tools.text_tools import Calculator
    call = CALL.format(tool="Calculator", arg="17 * 23")
    for said, expected in (("The answer is 327.", "17 * 23 = 391"), ("It is 3910.", "17 * 23 = 391"),
                           ("17 times 23 is 391.", "17 times 23 is 391.")):
        events, *_ = run([call, f"Thought: Do I need to use a tool? No\nAI: {said}"], box_image, tools=[Calculator()])
        assert events[-1].text == expected


def test_an_image_answer_names_the_file_and_what_it_is(box_image):
    from visual_tools.faces import FaceDetection
    events, *_ = run([lambda p: CALL.format(tool="Face Detection On Image", arg=last_image(p)),
                      "Thought: Do I need to use a tool? No\nAI: The output is a new image."], box_image,
                     tools=[FaceDetection()])
    obs = next(e for e in events if isinstance(e, ObservationEvent))
    assert re.fullmatch(r"image/\S+\.png \(0 faces found\)", obs.text)
    assert events[-1].text == f"Here is the image with the faces boxed: {obs.image} (0 faces found)."
    assert events[-1].images == [obs.image]


def test_earlier_answers_are_cut_short_keeping_their_image_names_and_the_upload_stays_in_view():
    from agent.history import prompt_history, short_answer
    from agent.prompts import Turn, image_turn
    long = " ".join(["word"] * 40) + " image/0a1b2c3d.png"
    assert short_answer(long) == " ".join(["word"] * 24) + " ... image/0a1b2c3d.png"
    assert short_answer("Here is the edge map: image/0a1b2c3d.png.") == "Here is the edge map: image/0a1b2c3d.png."
    history = [image_turn("image/0a1b2c3d.png", None)] + [Turn(f"q{i}", f"a{i}") for i in range(9)]
    kept = prompt_history(history, 6)
    assert kept[0] == history[0] and [t.human for t in kept[1:]] == [f"q{i}" for i in range(5, 9)]


def test_an_answer_copied_from_the_history_is_retried_once_without_it(box_image):
    from agent.prompts import Turn
    registry, session = ToolRegistry([Image2Canny()]), ChatSession()
    session.add_image(box_image, registry)
    session.history.append(Turn("what is 7 * 7?", "Here is the result: 49."))
    controller = ScriptedController(["Thought: Do I need to use a tool? No\nAI: Here is the result: 49.",
                                     "Thought: Do I need to use a tool? No\nAI: You're welcome!"])
    events = list(session.send(Agent(controller, registry, max_steps=1), "thanks"))  # a retry has a turn's steps
    assert events[-1].text == "You're welcome!"
    retry = next(e for e in events if type(e).__name__ == "RetryEvent")
    assert retry.copied == "Here is the result: 49."
    assert "what is 7 * 7" in controller.prompts[0] and "what is 7 * 7" not in controller.prompts[1]
    assert "Provide an image named" in controller.prompts[1]  # the upload stays


def test_an_image_tool_without_a_result_word_keeps_an_answer_that_names_its_file(box_image):
    class Painter(Tool):
        name, description, output, purpose = "Paint", "paints", "image_path", "paints"
        inputs = (Input("image_path", "image_path"),)

        def forward(self, image_path):
            from PIL import Image
            return Image.new("RGB", (8, 8))
    events, *_ = run([lambda p: CALL.format(tool="Paint", arg=last_image(p)),
                      lambda p: f"Thought: Do I need to use a tool? No\nAI: Painted: {last_image(p)}"],
                     box_image, tools=[Painter()])
    assert events[-1].text.startswith("Painted: image/")  # "the new image" names nothing to look for
