"""The controller spec (made once from flags or the Chat's controls), the engine table, and agent/'s import graph."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from agent.controller import Capability, ControllerError
from agent.factory import ENGINES, ControllerSpec, engines_for, with_capability

AGENT = Path(__file__).resolve().parent.parent / "agent"


def imports(path: Path) -> set[str]:
    """The agent modules `path` imports, anywhere in it (functions and TYPE_CHECKING blocks included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "agent":
            found.add(node.module.removeprefix("agent").removeprefix(".") or "__init__")
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("agent.") for a in node.names if a.name.startswith("agent.")}
    return {name.split(".")[0] for name in found}


def test_agent_has_no_import_circle():
    graph = {path.stem: imports(path) & {p.stem for p in AGENT.glob("*.py")} for path in AGENT.glob("*.py")}
    assert graph["controller"] <= {"grammar"}  # the protocol imports no engine
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, "import circle: " + " -> ".join((*path, module))
        if module not in done:
            for other in sorted(graph[module]):
                visit(other, (*path, module))
            done.add(module)

    for module in sorted(graph):
        visit(module, ())


@pytest.mark.parametrize(("text", "kind", "location"), [
    ("embedded", "embedded", ""),
    ("  embedded ", "embedded", ""),
    ("http://127.0.0.1:8000/v1", "openai", "http://127.0.0.1:8000/v1"),
    ("https://host/v1#my-model", "openai", "https://host/v1#my-model"),
    ("lmsys/vicuna-13b-v1.5", "transformers", "lmsys/vicuna-13b-v1.5"),
    ("/models/run-3", "transformers", "/models/run-3"),
])
def test_todays_controller_strings_parse_and_round_trip(text, kind, location, monkeypatch):
    monkeypatch.delenv("TOOLSMITH_ENGINE", raising=False)
    spec = ControllerSpec.parse(text, "runs/a/adapter" if kind != "openai" else None)
    assert (spec.kind, spec.location) == (kind, location)
    assert spec.engine == {"embedded": "auto", "transformers": "transformers", "openai": "openai"}[kind]
    assert ControllerSpec.parse(spec.text, spec.adapter, spec.engine) == spec
    assert hash(spec) == hash(ControllerSpec.parse(spec.text, spec.adapter, spec.engine))  # one pool key


def test_the_engine_is_part_of_the_spec_and_the_environment_is_the_fallback(monkeypatch):
    monkeypatch.setenv("TOOLSMITH_ENGINE", "transformers")
    assert ControllerSpec().engine == ControllerSpec.parse("embedded").engine == "transformers"
    assert ControllerSpec(engine="llama.cpp").engine == "llama.cpp"  # a flag beats the environment
    assert ControllerSpec.parse("gpt2").engine == "transformers"  # the variable is the embedded default's only
    assert ControllerSpec(engine="llama.cpp") != ControllerSpec(engine="transformers")
    monkeypatch.setenv("TOOLSMITH_ENGINE", "vulkan")
    with pytest.raises(ControllerError, match="unknown engine 'vulkan'"):
        ControllerSpec()


@pytest.mark.parametrize(("args", "message"), [
    (("openai", "gpt2"), "not an OpenAI-compatible URL"),
    (("transformers", "http://127.0.0.1:8000/v1"), "is a URL"),
    (("transformers", " "), "Enter a model id"),
    (("openai", "http://h/v1", "runs/a"), "cannot be applied to a remote controller"),
    (("transformers", "gpt2", None, "llama.cpp"), "one of auto, transformers"),
    (("server", "x"), "unknown controller kind"),
])
def test_a_spec_that_cannot_run_says_why(args, message):
    with pytest.raises(ControllerError, match=message):
        ControllerSpec(*args)


def test_adapter_none_means_untuned_for_the_embedded_model_only():
    assert ControllerSpec(adapter="none").adapter == "none"
    assert ControllerSpec.parse("gpt2", "none").adapter is None
    assert ControllerSpec.parse("gpt2", " ").adapter is None


def test_the_engine_table_names_each_engines_class_and_capabilities():
    assert engines_for("embedded") == ["llama.cpp", "transformers"]  # in order of preference
    assert ENGINES["transformers"].capabilities() == Capability.GRAMMAR | Capability.SCORES | Capability.WEIGHTS
    assert Capability.WEIGHTS not in ENGINES["llama.cpp"].capabilities()
    assert with_capability(ControllerSpec(engine="auto"), Capability.WEIGHTS) == ControllerSpec(engine="transformers")
    assert with_capability(ControllerSpec.parse("http://h/v1"), Capability.WEIGHTS) is None
    assert with_capability(ControllerSpec.parse("gpt2"), Capability.WEIGHTS) is None  # it is already that engine


def test_the_chat_cli_takes_an_engine_and_refuses_one_its_controller_cannot_run(tiny_llama, capsys):
    from agent.__main__ import main
    assert main(["chat", "--controller", str(tiny_llama), "--engine", "llama.cpp", "hi"]) == 1
    assert "one of auto, transformers" in json.loads(capsys.readouterr().out)["message"]
