"""The Chat tab driven through gradio_client against the launched app."""
import re
import threading

import pytest
from gradio_client import Client, handle_file

from app import build_app
from agent.factory import ControllerSpec
from agent.pool import ControllerPool
from chat_client import chat, files, texts
from conftest import free_port
from scripted import ScriptedController, last_image
from visual_tools import ToolRegistry, data_home


def policy(prompt: str) -> str:
    """Call Edge Detection on the newest image, then answer with the result (like a tuned model)."""
    if "\nObservation: " in prompt.rpartition("New input:")[2]:
        return f"Thought: Do I need to use a tool? No\nAI: The edges are in {last_image(prompt)}"
    return f"Thought: Do I need to use a tool? Yes\nAction: Edge Detection On Image\nAction Input: {last_image(prompt)}"


SCRIPTED = ScriptedController([policy])


@pytest.fixture(scope="module")
def app_url():
    pool = ControllerPool(default=ControllerSpec.parse("scripted"))
    pool.add(pool.default, SCRIPTED)
    demo = build_app(ToolRegistry.from_load("Image2Canny_cpu"), pool)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        allowed_paths=[str(data_home() / "sessions")])  # as app.main() launches it
    yield f"http://127.0.0.1:{port}/"
    demo.close()


def test_chat_turn_calls_canny_and_shows_steps_and_image(app_url, box_image):
    client = Client(app_url, verbose=False)
    messages = chat(client, "detect the edges of this image", box_image)
    tool_msgs = [m for m in messages if (m.get("metadata") or {}).get("title", "").endswith("Edge Detection On Image")]
    assert len(tool_msgs) == 1 and tool_msgs[0]["metadata"]["status"] == "done"
    assert tool_msgs[0]["metadata"]["duration"] >= 0
    assert re.search(r"Observation:\*\* image/[0-9a-f]{8}_edge_", texts(tool_msgs))
    shown = [f["alt_text"] for f in files(messages)]
    assert len(shown) == 2 and "_edge_" in shown[1]  # the upload, then the edge map inline
    assert messages[-1]["content"][0]["text"] == f"The edges are in {shown[1]}"


def test_each_turn_shows_the_tools_offered_and_decodes_under_their_grammar_unless_switched_off(app_url, box_image):
    client = Client(app_url, verbose=False)
    messages = chat(client, "detect the edges of this image", box_image)
    offered = [m for m in messages if "tools offered" in (m.get("metadata") or {}).get("title", "")]
    title = offered[0]["metadata"]["title"]
    assert title == "🧰 1 of 1 tools offered; replies constrained by the grammar of these tools"
    assert texts(offered) == "Edge Detection On Image"
    upload = files(messages)[0]["alt_text"]
    assert all(upload in g.gbnf and "Edge Detection On Image" in g.gbnf for g in SCRIPTED.grammars[-2:])
    client.predict(False, api_name="/set_grammar")
    messages = chat(client, "again, please")
    assert "replies unconstrained" in [m for m in messages if "tools offered" in (m.get("metadata") or {}).get(
        "title", "")][-1]["metadata"]["title"]
    assert SCRIPTED.grammars[-1] is None and "_edge_" in files(messages)[-1]["alt_text"]


def test_sessions_are_isolated_under_concurrency(app_url, box_image):
    results = {}

    def user(i):
        results[i] = chat(Client(app_url, verbose=False), f"edges please {i}", box_image)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    uploads = {i: files(m)[0]["alt_text"] for i, m in results.items()}
    assert len(set(uploads.values())) == 3
    for i, messages in results.items():
        others = [u for j, u in uploads.items() if j != i]
        assert f"edges please {i}" in texts(messages)
        assert not any(o in texts(messages) for o in others)
        assert len(files(messages)) == 2 and files(messages)[1]["alt_text"].endswith(f"_{uploads[i][6:14]}.png")


def test_empty_and_image_only_and_bad_uploads(app_url, box_image, tmp_path):
    client = Client(app_url, verbose=False)
    messages, _ = client.predict({"text": "   ", "files": []}, api_name="/add_message")
    assert messages == []
    messages, _ = client.predict({"text": "", "files": [handle_file(str(box_image))]}, api_name="/add_message")
    assert len(files(messages)) == 1 and "Received" in texts(messages)
    assert client.predict(api_name="/respond") == messages  # nothing to answer: no agent turn
    bad = tmp_path / "corrupt.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\ngarbage")
    messages, _ = client.predict({"text": "", "files": [handle_file(str(bad))]}, api_name="/add_message")
    assert "Upload refused: not a readable image" in texts(messages)
    assert "The edges are in" in texts(chat(client, "and the edges?"))  # still serving this session


def test_undo_and_clear(app_url, box_image):
    client = Client(app_url, verbose=False)
    before = chat(client, "edges", box_image)
    after = chat(client, "again")
    assert len(after) > len(before)
    assert client.predict(api_name="/undo") == before
    assert client.predict(api_name="/clear") == []


def test_unreachable_controller_url_is_reported_and_app_keeps_serving(app_url, box_image):
    client = Client(app_url, verbose=False)
    url = f"http://127.0.0.1:{free_port()}/v1#m"
    assert "Using" in client.predict("openai", url, "", api_name="/load_controller")
    messages = chat(client, "hello", box_image)
    assert "Controller error: cannot reach the controller" in texts(messages)
    assert "The edges are in" in texts(chat(Client(app_url, verbose=False), "edges", box_image))


def test_tools_tab_lists_and_runs_a_tool(app_url, box_image):
    client = Client(app_url, verbose=False)
    table = client.predict(api_name="/tool_table")
    assert [row[0] for row in table["data"]] == ["Edge Detection On Image"]
    assert table["data"][0][table["headers"].index("GPU memory")] == "–"  # OpenCV: no model to load
    image, observation, _ = client.predict("Edge Detection On Image", handle_file(str(box_image)), "",
                                           api_name="/run_tool")
    assert "_edge_" in observation and image.endswith(".png")
    with pytest.raises(Exception, match="needs an image"):
        client.predict("Edge Detection On Image", None, "", api_name="/run_tool")
    table = client.predict(api_name="/tool_table")
    assert "loaded" in table["data"][0][table["headers"].index("Status")]


def test_render_event_drops_drafts_and_empty_thoughts(store):
    from agent.chat_ui import render_event
    from agent.events import AnswerEvent, DraftEvent, ThoughtEvent
    messages = []
    render_event(messages, DraftEvent(0, "Thought: Do I"), store)
    render_event(messages, DraftEvent(0, "Thought: Do I need"), store)
    assert len(messages) == 1 and messages[0].metadata["status"] == "pending"
    render_event(messages, ThoughtEvent(0, ""), store)
    render_event(messages, AnswerEvent("hello"), store)
    assert [m.content for m in messages] == ["hello"]
