"""Toolsmith: `python app.py` opens the Gradio app (also the Hugging Face Space entry point)."""
from __future__ import annotations

import argparse
import json
import os
import threading
from functools import partial
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from agent.chat_ui import ChatServices, ChatTab, build_chat_tab, controls  # noqa: E402
from agent.controller import ControllerError  # noqa: E402
from agent.factory import ControllerSpec, add_engine_flag  # noqa: E402
from agent.pool import ControllerPool  # noqa: E402
from agent.shortlist import DEFAULT_K  # noqa: E402
from training.data.review_store import ReviewStore  # noqa: E402
from training.toolace_r.refine import SelfRefine  # noqa: E402
from training.ui import (HOTKEYS, TrainTab, build_data_tab, build_evaluate_tab, build_review_tab,  # noqa: E402
                         build_toolace_tab, build_toolformer_tab, build_train_tab)
from visual_tools import ToolRegistry, data_home  # noqa: E402
from visual_tools.image_store import SWEEPER  # noqa: E402
from visual_tools.ui import build_tools_tab  # noqa: E402


DEMO_UPLOAD_MB = 10.0
DEMO_NOTICE = ("{what} is switched off in this shared demo: it runs models over whole datasets. Run Toolsmith on "
               "your own machine (`make run`, see the README) to train LoRA adapters, ToolACE-R and Toolformer, and "
               "to evaluate them.")


def demo_default() -> bool:
    """TOOLSMITH_DEMO=1/0 if set; else on in a Hugging Face Space (a duplicated private Space sets it to 0)."""
    flag = os.environ.get("TOOLSMITH_DEMO")
    return bool(os.environ.get("SPACE_ID")) if flag is None else flag not in ("", "0", "false", "False")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Toolsmith: a GPT4Tools-style visual tool agent in Gradio.")
    parser.add_argument("--controller", default="embedded",
                        help="'embedded' (SmolLM2-135M, offline), a hub id or local folder "
                             "(e.g. lmsys/vicuna-13b-v1.5), or an OpenAI-compatible URL such as "
                             "http://127.0.0.1:8000/v1#model-name (default: embedded)")
    parser.add_argument("--adapter", default=None, help="a peft LoRA adapter folder to apply to the controller")
    add_engine_flag(parser)
    parser.add_argument("--load", default=None,
                        help='tools and devices, e.g. "ImageCaptioning_cuda:0,Image2Canny_cpu" '
                             "(default: every tool, on cuda:0 if present else cpu)")
    parser.add_argument("--max-steps", type=int, default=5, help="tool steps per turn (default 5)")
    parser.add_argument("--shortlist", type=int, default=DEFAULT_K, metavar="K",
                        help=f"offer each turn the likeliest tools, ranked, at most K (default {DEFAULT_K}); "
                             "0: every available tool (GPT4Tools' released LoRA and hub models may want that)")
    parser.add_argument("--no-grammar", action="store_true",
                        help="decode replies unconstrained (the Chat has a switch too)")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="address to listen on (0.0.0.0 for a LAN; Spaces set GRADIO_SERVER_NAME)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)))
    parser.add_argument("--share", action="store_true", help="open a public gradio.live link")
    parser.add_argument("--auth", default=None,
                        help='"user:pass[,user2:pass2]": ask for a login; reviewers are named by it')
    parser.add_argument("--demo", action=argparse.BooleanOptionalAction, default=demo_default(),
                        help="a shared Space: no training, small data generation, uploads limited by "
                             "--max-upload-mb (default: on in a Space, SPACE_ID set; TOOLSMITH_DEMO=0/1 decides)")
    parser.add_argument("--max-upload-mb", type=float, default=None,
                        help=f"largest upload in MB (default: {DEMO_UPLOAD_MB:g} with --demo, else no limit)")
    parser.add_argument("--tool-timeout", type=float, default=300.0,
                        help="seconds a tool call may take before the agent goes on without it (default 300)")
    parser.add_argument("--session-max-age", type=float, default=24.0,
                        help="hours after which an unused chat session's images are deleted (default 24)")
    parser.add_argument("--sessions-max-mb", type=float, default=2048.0,
                        help="all sessions' images together; the least recently used go first (default 2048)")
    return parser.parse_args(argv)


def toolformer_answer(*args, **kwargs):
    """Toolformer's decoding with calls (`training.toolformer.decode.answer`), imported at its first use: it needs
    torch and transformers, which starting the app on llama.cpp does not."""
    from training.toolformer.decode import answer
    return answer(*args, **kwargs)


def build_app(registry: ToolRegistry, controllers: ControllerPool, max_steps: int = 5,
              review_store: ReviewStore | None = None, *, demo: bool = False,
              tool_timeout: float | None = None, shortlist: int = DEFAULT_K, grammar: bool = True) -> gr.Blocks:
    """The whole app; each package builds its own tab. `demo`: a shared Space (no training or evaluation, small
    generation, the default controller only)."""
    review_store = review_store or ReviewStore.default()
    with gr.Blocks(title="Toolsmith") as app:
        gr.Markdown("# 🛠️ Toolsmith\nA controller LLM that answers with GPT4Tools' "
                    "*Thought / Action / Observation* format and calls visual tools.")
        with gr.Tabs() as tabs:
            with gr.Tab("Chat", id="chat"):
                refine = partial(SelfRefine, mode="adaptive", tools=registry.tools)
                chat = build_chat_tab(ChatServices(registry, controllers, max_steps, tool_timeout, demo,
                                                   toolformer=toolformer_answer, refine=refine, shortlist_k=shortlist,
                                                   grammar=grammar))
            with gr.Tab("Tools"):
                build_tools_tab(registry, tool_timeout)
            with gr.Tab("Data"):
                build_data_tab(review_store, registry, demo)
            with gr.Tab("Review") as review_tab:
                review = build_review_tab(review_store, registry)
            with gr.Tab("Train"):
                if demo:
                    gr.Markdown(DEMO_NOTICE.format(what="Training"))
                else:
                    with gr.Tabs():
                        with gr.Tab("LoRA (GPT4Tools)"):
                            train = build_train_tab()
                        with gr.Tab("ToolACE-R"):
                            build_toolace_tab()
                        with gr.Tab("Toolformer"):
                            build_toolformer_tab()
            with gr.Tab("Evaluate"):
                if demo:
                    gr.Markdown(DEMO_NOTICE.format(what="Evaluation"))
                else:
                    build_evaluate_tab(controllers, registry)
        if not demo:
            _wire_load_in_chat(train, chat, tabs)
            app.load(*train.on_load)
        review_tab.select(*review.refresh)
        app.load(*review.refresh, api_name="review_refresh")
        app.load(*review.on_load)
    return app


def _wire_load_in_chat(train: TrainTab, chat: ChatTab, tabs: gr.Tabs) -> None:
    """The Train tab's "Load in Chat": the Chat tab's controller picker takes the run's base and adapter."""
    def pick(adapter: str):
        meta = json.loads((Path(adapter) / "toolsmith.json").read_text())
        try:
            return controls(ControllerSpec.parse(meta["config"]["base"], adapter))
        except ControllerError as exc:
            raise gr.Error(str(exc)) from None

    picker = [chat.backend, chat.location, chat.adapter, chat.engine]
    train.load_in_chat.click(pick, train.adapter, picker, api_name="load_in_chat").then(
        *chat.load).then(lambda: gr.Tabs(selected="chat"), None, tabs)


def parse_auth(spec: str | None) -> list[tuple[str, str]] | None:
    if not spec:
        return None
    pairs = [tuple(item.split(":", 1)) for item in spec.split(",") if item.strip()]
    if any(len(pair) != 2 or not all(pair) for pair in pairs):
        raise SystemExit('error: --auth must look like "user:pass[,user2:pass2]"')
    return pairs


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    auth = parse_auth(args.auth)
    try:
        registry = ToolRegistry.from_load(args.load)
    except ValueError as exc:
        raise SystemExit(f"error: --load: {exc}") from None
    print(f"Loading controller {args.controller}...", flush=True)
    try:
        pool = ControllerPool(default=ControllerSpec.parse(args.controller, args.adapter, args.engine))
        print(f"Controller ready: {pool.get().name}", flush=True)
    except ControllerError as exc:
        raise SystemExit(f"error: {exc}") from None
    SWEEPER.max_age_s, SWEEPER.max_bytes = args.session_max_age * 3600, int(args.sessions_max_mb * 1024**2)
    upload_mb = args.max_upload_mb if args.max_upload_mb is not None else DEMO_UPLOAD_MB if args.demo else None
    app = build_app(registry, pool, args.max_steps, demo=args.demo, tool_timeout=args.tool_timeout,
                    shortlist=args.shortlist, grammar=not args.no_grammar)
    threading.Thread(target=ChatServices(registry, pool, shortlist_k=args.shortlist).warm_up, daemon=True).start()
    app.queue(default_concurrency_limit=4).launch(
        server_name=args.host, server_port=args.port, share=args.share,
        allowed_paths=[str(data_home() / "sessions")], theme=gr.themes.Soft(), head=HOTKEYS, auth=auth,
        max_file_size=f"{upload_mb}mb" if upload_mb else None)


if __name__ == "__main__":
    main()
