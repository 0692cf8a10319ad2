"""The embedded controller on its two engines, side by side: today's fp32 transformers path (with its prefix
cache) against llama.cpp, the same prompts, the same adapter (assets/controller-lora).

Each engine runs in processes of its own (peak RSS is per process): a first start on an empty data folder
(conversions included), a later start, then the measures: decode tokens/s, time to first token with 3 and 30
earlier turns in the prompt (the previous turn's prompt cached, as in a chat in progress), a 3-step episode
of fixed 32-token steps, and a real chat turn through the agent loop (upload, Edge Detection, answer).
Then, on llama.cpp, the shortlist and the grammar: decode tokens/s of agent steps with and without the grammar,
and a chat turn (the second of a conversation, the first one's prompt cached) with the app's 11 tools or all 36
offered, each with the grammar and the shortlist off and on.
With --only-templates, on llama.cpp in one process: for each adapter given (each renders its own template, from its
toolsmith.json), a chat turn with a tool and a 3-step episode, and the tokens each step has to prefill (what the
KV cache of the step before does not hold).
Run: python bench/agent_step.py [--repeats 2] [--only-starts | --only-constraints | --only-templates
     --adapter gpt4tools=assets/controller-lora --adapter compact=runs/compact/adapter]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from agent.factory import ControllerSpec, engines_for, load_controller  # noqa: E402

ENGINES = engines_for("embedded")
DECODE_PROMPT = "Write a long story about a lighthouse keeper and a storm."


def episode_prompts(steps: int, history_turns: int) -> tuple[str, list[str]]:
    """The previous turn's prompt (what a chat in progress has cached), then this turn's step prompts."""
    from agent.prompts import ScratchStep, Turn, image_turn, render_prompt, render_step
    from visual_tools import ToolRegistry
    tools = ToolRegistry.from_load(None).all()  # every registered tool, as a GPU machine offers them
    history = [image_turn("image/1a2b3c4d.png", "a white box on a black table")]
    history += [Turn(f"What is in image/1a2b3c4d.png, part {i}?", f"It shows a white box, detail {i}.")
                for i in range(history_turns)]
    previous = render_prompt(tools, history[:-1], history[-1].human)
    done: list[ScratchStep] = []
    prompts = []
    for i in range(steps):
        prompts.append(render_prompt(tools, history, "Detect the edges, then describe them.", done))
        done.append(ScratchStep(render_step("Do I need to use a tool? Yes", "Edge Detection On Image",
                                            "image/1a2b3c4d.png"), f"image/{i:08x}_edge_1a2b3c4d_1a2b3c4d.png"))
    return previous, prompts


def tokens(controller, text: str, ids: bool = False):
    encoded = controller.tokenizer(text, add_special_tokens=False)["input_ids"]
    return encoded if ids else len(encoded)


def measure(engine: str, repeats: int) -> dict:
    """Everything but the starts, in this process (the caller runs it in a fresh one)."""
    from agent.loop import Agent
    from agent.prompts import image_turn
    from visual_tools import ImageStore, ToolRegistry
    controller = load_controller(ControllerSpec(engine=engine))
    out: dict = {"name": controller.name}
    controller.generate("Hello", max_new_tokens=4)  # warm-up
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        text = controller.generate(DECODE_PROMPT, max_new_tokens=128)[0]
        rates.append(tokens(controller, text) / (time.perf_counter() - start))
    out["decode tokens/s"] = max(rates)
    for turns in (3, 30):
        previous, prompts = episode_prompts(3, turns)
        first, episode = [], []
        for _ in range(repeats):
            controller.generate(previous, max_new_tokens=1)  # the previous turn is in the cache
            start = time.perf_counter()
            controller.generate(prompts[0], max_new_tokens=1)
            first.append(time.perf_counter() - start)
            controller.generate(previous, max_new_tokens=1)
            start = time.perf_counter()
            for prompt in prompts:
                controller.generate(prompt, max_new_tokens=32)
            episode.append(time.perf_counter() - start)
        out[f"first token, {turns} turns (s)"] = statistics.median(first)
        out[f"3-step episode, {turns} turns (s)"] = statistics.median(episode)
        out[f"prompt tokens, {turns} turns"] = len(controller.encode_prompt(prompts[0]))
    registry, turn_times = ToolRegistry.from_load(None), []
    for _ in range(repeats):
        store = ImageStore.new_session()
        name = store.save_upload(ROOT / "assets" / "chelsea.png")
        start = time.perf_counter()
        events = list(Agent(controller, registry).run("Detect the edges of this image.",
                                                      [image_turn(name, None)], store))
        turn_times.append(time.perf_counter() - start)
        store.delete()
        out["turn ends with"] = type(events[-1]).__name__
    out["chat turn with a tool (s)"] = statistics.median(turn_times)
    out["peak RSS (MB)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


STEP_REQUESTS = ["can you outline the cat for me? just the edges", "crop to pixels 10,20 to 200,180",
                 "hi there, how are you?", "what is 12 times 7?", "find the faces in this photo", "thanks, that's all"]


def measure_constraints(repeats: int) -> dict:
    """Grammar and shortlist on llama.cpp (see the module's docstring)."""
    from agent.grammar import build_grammar
    from agent.loop import Agent
    from agent.prompts import STOP, image_turn, render_prompt
    from agent.session import ChatSession
    from agent.shortlist import SHIPPED_RETRIEVER, load_shortlist
    from visual_tools import ToolRegistry
    controller = load_controller(ControllerSpec(engine="llama.cpp"))
    registry = ToolRegistry.from_load(None)
    available = registry.available()
    out: dict = {"name": controller.name}  # the chat turns below run on the default matcher, llguidance
    history = [image_turn("image/1a2b3c4d.png", "a cat on a table")]
    for matcher in ("off", "llama.cpp", "llguidance"):
        controller.matcher = matcher
        made = seconds = 0.0
        for _ in range(repeats):
            for request in STEP_REQUESTS:
                prompt = render_prompt(available, history, request)
                controller.generate(prompt, max_new_tokens=1)  # the prompt is cached: decoding alone is timed
                constraint = build_grammar(available, ["image/1a2b3c4d.png"]) if matcher != "off" else None
                began = time.perf_counter()
                text = controller.generate(prompt, stop=STOP, max_new_tokens=64, grammar=constraint)[0]
                seconds += time.perf_counter() - began
                made += tokens(controller, text)
        out[f"step decode tokens/s, grammar {matcher}"] = made / seconds
    everything = ToolRegistry.from_load(None)
    everything.available = everything.all  # as on a machine with every checkpoint: all 36 offered
    for label, tools in (("11 tools", registry), ("all 36", everything)):
        for on in (False, True):
            controller.matcher = "llguidance"
            shortlist = load_shortlist(5 if on else 0, SHIPPED_RETRIEVER, tools.all())[0]
            times = []
            for _ in range(repeats):
                session = ChatSession()
                session.add_image(ROOT / "assets" / "chelsea.png", tools)
                agent = Agent(controller, tools, shortlist=shortlist, grammar=on)
                list(session.send(agent, "Find the faces in this photo."))
                began = time.perf_counter()
                events = list(session.send(agent, "Detect the edges of this image."))
                times.append(time.perf_counter() - began)
                session.store.delete()
            out[f"chat turn, {label}, shortlist + grammar {'on' if on else 'off'} (s)"] = statistics.median(times)
            out[f"… ends with ({label}, {'on' if on else 'off'})"] = type(events[-1]).__name__
    return out


def common_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def measure_templates(repeats: int, adapters: dict[str, str]) -> dict:
    """Per adapter (its template): a chat turn with a tool (the second of a conversation, shortlist and grammar on),
    a 3-step episode of fixed 32-token steps after the previous turn, and the tokens prefilled per step."""
    from agent.loop import Agent
    from agent.prompts import Prompt, ScratchStep, image_turn, render_prompt, render_step
    from agent.session import ChatSession
    from agent.shortlist import load_shortlist, retriever_folder
    from visual_tools import ToolRegistry
    registry, out = ToolRegistry.from_load(None), {}
    for label, adapter in adapters.items():
        spec = ControllerSpec(adapter=adapter, engine="llama.cpp")
        controller, template = load_controller(spec), spec.template
        shortlist = load_shortlist(5, retriever_folder(adapter), registry.all())[0]
        row: dict = {"template": template}
        times = []
        for _ in range(repeats):
            session = ChatSession()
            session.add_image(ROOT / "assets" / "chelsea.png", registry)
            agent = Agent(controller, registry, shortlist=shortlist, template=template)
            list(session.send(agent, "Find the faces in this photo."))
            began = time.perf_counter()
            events = list(session.send(agent, "Detect the edges of this image."))
            times.append(time.perf_counter() - began)
            session.store.delete()
        row["chat turn with a tool (s)"], row["turn ends with"] = statistics.median(times), type(events[-1]).__name__
        tools = [registry.get("Edge Detection On Image"), registry.get("Crop Image")]
        history = [image_turn("image/1a2b3c4d.png", "a white box on a black table")]
        previous = render_prompt(tools, history[:-1], history[-1].human, (), template)
        episode, prefill = [], []
        for _ in range(repeats):
            controller.generate(previous, max_new_tokens=1)
            done, cached, began = [], controller.encode_prompt(previous), time.perf_counter()
            prefill = []
            for i in range(3):
                prompt: Prompt = render_prompt(tools, history, "Crop the box, then detect its edges.", done, template)
                ids = controller.encode_prompt(prompt)
                prefill.append(len(ids) - common_prefix(ids, cached))
                text = controller.generate(prompt, max_new_tokens=32)[0]
                cached = ids + tokens(controller, text, ids=True)
                done.append(ScratchStep(render_step("Do I need to use a tool? Yes", "Edge Detection On Image",
                                                    "image/1a2b3c4d.png"), f"image/{i:08x}_edge_1a2b3c4d_1a2b3c4d.png"))
            episode.append(time.perf_counter() - began)
        row["3-step episode (s)"] = statistics.median(episode)
        row["prompt tokens, step 1"] = len(controller.encode_prompt(
            render_prompt(tools, history, "Crop the box, then detect its edges.", (), template)))
        for i, n in enumerate(prefill, 1):
            row[f"prefilled tokens, step {i}"] = n
        out[label] = row
        del controller
    return out


def start(engine: str) -> None:
    """A cold start: load the controller and write one token."""
    load_controller(ControllerSpec(engine=engine)).generate("Hi", max_new_tokens=1)


def child(engine: str, task: str, home: str, repeats: int, extra: tuple[str, ...] = ()) -> tuple[float, dict]:
    command = [sys.executable, __file__, "--worker", task, "--engine", engine, "--repeats", str(repeats), *extra]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "TOOLSMITH_HOME": home})
    if done.returncode:
        raise SystemExit(f"{engine} {task} failed:\n{done.stderr[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return time.perf_counter() - began, json.loads(lines[-1]) if lines else {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--worker", choices=["start", "measure", "constraints", "templates"], help=argparse.SUPPRESS)
    parser.add_argument("--only-templates", action="store_true", help="only the templates table (--adapter)")
    parser.add_argument("--adapter", action="append", metavar="LABEL=PATH", default=[],
                        help="--only-templates: an adapter (it names its template); repeat")
    parser.add_argument("--only-constraints", action="store_true", help="only the grammar and shortlist table")
    parser.add_argument("--only-starts", action="store_true", help="only the first and later starts of each engine")
    parser.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "start":
        start(args.engine)
        return
    if args.worker == "measure":
        print(json.dumps(measure(args.engine, args.repeats)))
        return
    if args.worker == "constraints":
        print(json.dumps(measure_constraints(args.repeats)))
        return
    if args.worker == "templates":
        print(json.dumps(measure_templates(args.repeats, dict(a.split("=", 1) for a in args.adapter))))
        return
    if args.only_starts:
        starts(args.repeats)
        return
    if args.only_templates:
        templates(args.repeats, args.adapter)
        return
    if not args.only_constraints:
        engines(args.repeats)
    with tempfile.TemporaryDirectory() as home:
        child("llama.cpp", "start", home, args.repeats)
        _, out = child("llama.cpp", "constraints", home, args.repeats)
    off = out["step decode tokens/s, grammar off"]
    today = out["chat turn, 11 tools, shortlist + grammar off (s)"]
    print(f"\n{out['name']}: grammar and shortlist, median of {args.repeats} runs\n\n| measure | value | vs baseline |"
          "\n|---|---|---|")
    print(f"| step decode tokens/s, grammar off | {off:.1f} | baseline |")
    for matcher in ("llama.cpp", "llguidance"):
        on = out[f"step decode tokens/s, grammar {matcher}"]
        print(f"| step decode tokens/s, grammar by {matcher} | {on:.1f} | **{on / off:.0%}** of off (target >= 85 %) |")
    for key, value in out.items():
        if key.startswith("chat turn"):
            print(f"| {key} | {value:.2f} | **{today / value:.2f}x** the speed of 11 tools, both off (today) |")
    print("| turns end with | " + ", ".join(sorted({v for k, v in out.items() if k.startswith("…")})) + " | |")


def starts(repeats: int) -> None:
    """A first start on an empty data folder, then `repeats` later starts, each a whole process."""
    print(f"starts are whole processes (python to the first token); later: median of {repeats}\n\n"
          "| engine | first start (s) | later start (s) | later start < 5 s |\n|---|---|---|---|")
    for engine in ENGINES:
        with tempfile.TemporaryDirectory() as home:
            first, _ = child(engine, "start", home, 1)
            later = statistics.median(child(engine, "start", home, 1)[0] for _ in range(repeats))
        print(f"| {engine} | {first:.2f} | {later:.2f} | {'met' if later < 5 else 'missed'} |", flush=True)


def templates(repeats: int, adapters: list[str]) -> None:
    """Both templates, one process, one table (the first adapter is the baseline)."""
    with tempfile.TemporaryDirectory() as home:
        child("llama.cpp", "start", home, 1)
        _, out = child("llama.cpp", "templates", home, repeats,
                       tuple(x for a in adapters for x in ("--adapter", a)))
    labels = list(out)
    base = out[labels[0]]
    print(f"llama.cpp, median of {repeats} runs; the first column is the baseline\n\n| measure | "
          + " | ".join(f"{label} ({out[label]['template']})" for label in labels) + " | vs baseline |\n|---|"
          + "---|" * (len(labels) + 1))
    for key, value in base.items():
        if key == "template":
            continue
        cells = [f"{out[label][key]:.2f}" if isinstance(out[label][key], float) else str(out[label][key])
                 for label in labels]
        ratio = (f"**{value / out[labels[-1]][key]:.2f}x** faster" if key.endswith("(s)") else
                 f"**{out[labels[-1]][key] / value:.0%}**" if isinstance(value, int) and value else "")
        print(f"| {key} | " + " | ".join(cells) + f" | {ratio} |")


def engines(repeats: int) -> None:
    results = {}
    for engine in ENGINES:
        with tempfile.TemporaryDirectory() as home:  # an empty data folder: the first start converts
            first, _ = child(engine, "start", home, repeats)
            later, _ = child(engine, "start", home, repeats)
            _, measured = child(engine, "measure", home, repeats)
        results[engine] = {"first start (s)": first, "later start (s)": later, **measured}
        print(f"{engine}: {results[engine]['name']}", flush=True)
    base, fast = results["transformers"], results["llama.cpp"]
    print(f"\nembedded controller, 2 engines; median of {repeats} runs (decode: best); starts are whole processes"
          "\n\n| measure | transformers fp32 + prefix cache | llama.cpp | llama.cpp faster / smaller |"
          "\n|---|---|---|---|")
    for key, value in base.items():
        if isinstance(value, float):
            better = value / fast[key] if "tokens/s" not in key else fast[key] / value
            print(f"| {key} | {value:.2f} | {fast[key]:.2f} | **{better:.1f}x** |")
    for key in ("prompt tokens, 3 turns", "prompt tokens, 30 turns", "turn ends with"):
        print(f"| {key} | {base[key]} | {fast[key]} | |")


if __name__ == "__main__":
    main()
