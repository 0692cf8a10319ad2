"""`python -m agent chat [--image PATH] "message"` (one JSON event per line) and `python -m agent serve`."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from visual_tools import ImageInputError, ToolRegistry

from .controller import ControllerError
from .events import DraftEvent
from .factory import ControllerSpec, add_engine_flag, load_controller
from .loop import Agent
from .session import ChatSession
from .shortlist import DEFAULT_K, load_shortlist, retriever_folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent")
    sub = parser.add_subparsers(dest="command", required=True)
    chat = sub.add_parser("chat", help="run one turn and print its events as JSON lines")
    chat.add_argument("message")
    chat.add_argument("--image", action="append", default=[], help="an image to upload first (repeatable)")
    serve = sub.add_parser("serve", help="serve a local controller over an OpenAI-compatible API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--model-name", default=None, help="the id clients ask for (default: the controller's)")
    for p in (chat, serve):
        p.add_argument("--controller", default="embedded", help="embedded | hub id or folder | http(s) URL")
        p.add_argument("--adapter", default=None, help="a peft LoRA adapter folder")
        add_engine_flag(p)
    chat.add_argument("--load", default=None, help='tools and devices, e.g. "Image2Canny_cpu"')
    chat.add_argument("--max-steps", type=int, default=5)
    chat.add_argument("--shortlist", type=int, default=DEFAULT_K, metavar="K",
                      help=f"offer the likeliest tools, ranked, at most K (default {DEFAULT_K}); 0: all available")
    chat.add_argument("--no-grammar", action="store_true", help="decode the replies unconstrained")
    args = parser.parse_args(argv)

    try:
        spec = ControllerSpec.parse(args.controller, args.adapter, args.engine)
        controller = load_controller(spec)
    except ControllerError as exc:
        print(json.dumps({"type": "ErrorEvent", "message": str(exc)}))
        return 1
    if args.command == "serve":
        import uvicorn

        from .server import create_app
        app = create_app(controller, args.model_name or controller.name,
                         load_adapter=lambda path: load_controller(replace(spec, adapter=path)))
        uvicorn.run(app, host=args.host, port=args.port)
        return 0

    registry, session = ToolRegistry.from_load(args.load), ChatSession()
    print(json.dumps({"type": "SessionEvent", "folder": str(session.store.root), "controller": controller.name}))
    try:
        for image in args.image:
            print(json.dumps({"type": "ImageEvent", "name": session.add_image(image, registry)}), flush=True)
    except ImageInputError as exc:
        print(json.dumps({"type": "ErrorEvent", "message": str(exc)}))
        return 1
    shortlist, note = load_shortlist(args.shortlist, retriever_folder(spec.adapter), registry.all())
    if note:
        print(json.dumps({"type": "NoteEvent", "message": note}), flush=True)
    agent = Agent(controller, registry, max_steps=args.max_steps, shortlist=shortlist, grammar=not args.no_grammar,
                  template=spec.template)
    for event in session.send(agent, args.message):
        if not isinstance(event, DraftEvent):
            print(json.dumps(event.to_dict()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
