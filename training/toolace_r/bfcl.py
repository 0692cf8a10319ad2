"""BFCL through the installed `bfcl-eval` package: its bundled questions and possible answers, its system prompt,
its decoder and its AST checker (never re-implemented here).

`bfcl-eval` is installed with --no-deps (its declared dependencies pull every vendor SDK); the one module its
checker imports that needs those SDKs, `bfcl_eval.constants.model_config`, is provided by `_install_model_config`
with a mapping for our model name only. `BFCL_PROJECT_ROOT` points at our data folder (importing the package
creates folders there).
"""
from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from visual_tools import data_home

ROLES = {"user": "User", "assistant": "Assistant", "tool": "Tool"}  # how the prompt names each turn
MODEL_NAME = "toolsmith"  # the model name handed to the checker (it looks dotted gold names up by it)
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "live_simple",
              "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance")


UNPARSABLE_NOTE = ("Unparsable replies count as failures, except in irrelevance categories, where BFCL itself scores "
                   "them: a reply that does not decode to a call is right there.")


class BFCLUnavailable(RuntimeError):
    """bfcl-eval (or its tree-sitter decoders) is not installed."""


@dataclass(frozen=True)
class _ModelConfig:
    underscore_to_dot: bool = False  # our replies keep dotted names (math.factorial) as they are


def _install_model_config() -> None:
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.MODEL_CONFIG_MAPPING = {MODEL_NAME: _ModelConfig()}
        sys.modules[name] = module


def bfcl() -> types.SimpleNamespace:
    """The parts of bfcl-eval we use, imported once the environment is prepared."""
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(data_home() / "bfcl"))
    _install_model_config()
    try:
        from bfcl_eval.constants.default_prompts import DEFAULT_SYSTEM_PROMPT_FORMAT
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
        from bfcl_eval.model_handler.utils import default_decode_ast_prompting, formulate_system_prompt
        from bfcl_eval.utils import is_empty_output, load_dataset_entry, load_ground_truth_entry
    except ImportError as exc:
        raise BFCLUnavailable(f"BFCL needs bfcl-eval and its decoders ({exc}); run `make install`") from None
    return types.SimpleNamespace(DEFAULT_SYSTEM_PROMPT_FORMAT=DEFAULT_SYSTEM_PROMPT_FORMAT, Language=Language,
                                 ast_checker=ast_checker, decode=default_decode_ast_prompting,
                                 formulate_system_prompt=formulate_system_prompt, is_empty_output=is_empty_output,
                                 load_dataset_entry=load_dataset_entry, load_ground_truth_entry=load_ground_truth_entry)


def system_prompt(functions: list[dict]) -> str:
    """BFCL's default system prompt for prompting models, with the functions as JSON."""
    lib = bfcl()
    return lib.formulate_system_prompt(lib.DEFAULT_SYSTEM_PROMPT_FORMAT, functions)


def render_fc(functions: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, str]]) -> str:
    """BFCL's system prompt for these functions, then the conversation (system messages join the system prompt)."""
    system = "\n\n".join([system_prompt(list(functions))] + [m["content"] for m in messages if m["role"] == "system"])
    turns = [f"{ROLES.get(m['role'], m['role'].title())}: {m['content']}" for m in messages if m["role"] != "system"]
    return system.rstrip() + "\n\n" + "\n".join(turns)


@dataclass
class Case:
    id: str
    category: str
    prompt: str
    functions: list[dict]
    answer: list[dict] | None  # possible answers; None for irrelevance (the right answer is no call)


def load_category(category: str, limit: int = 0) -> list[Case]:
    """The first `limit` questions (0: all) of a single-turn python category, as prompts for our controllers."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown or unsupported BFCL category '{category}'; supported: {', '.join(CATEGORIES)}")
    lib = bfcl()
    entries = lib.load_dataset_entry(category)
    answers = {} if "irrelevance" in category else {a["id"]: a["ground_truth"]
                                                    for a in lib.load_ground_truth_entry(category)}
    entries = entries[:limit] if limit else entries
    return [Case(e["id"], category, render_fc(e["function"], e["question"][0]), e["function"], answers.get(e["id"]))
            for e in entries]


def check(case: Case, reply: str) -> tuple[bool, str]:
    """(correct, note) by BFCL's own rules: decode with its decoder, score with its AST checker; for irrelevance,
    right when nothing decodes to a call. An undecodable reply ("unparsable: ...") is wrong everywhere else."""
    lib = bfcl()
    try:
        decoded = lib.decode(reply)
    except Exception as exc:  # BFCL's decoder raises whatever `ast` raises
        decoded, error = None, f"unparsable: {type(exc).__name__}"
    else:
        error = ""
    if case.answer is None:
        called = decoded is not None and not lib.is_empty_output(decoded)
        return not called, "made a call" if called else error
    if decoded is None:
        return False, error
    result = lib.ast_checker(case.functions, decoded, case.answer, lib.Language.PYTHON, case.category, MODEL_NAME)
    return bool(result["valid"]), "" if result["valid"] else result.get("error_type", "invalid")


@dataclass
class Outcome:
    id: str
    category: str
    reply: str
    correct: bool
    error: str
    rounds: int


def evaluate(generate: Callable[[str], tuple[str, int]], cases: list[Case],
             on_case: Callable[[int, int], None] | None = None) -> list[Outcome]:
    """`generate(prompt) -> (reply, refine rounds)` on every case, scored by BFCL's checker."""
    out = []
    for number, case in enumerate(cases, 1):
        reply, rounds = generate(case.prompt)
        correct, error = check(case, reply)
        out.append(Outcome(case.id, case.category, reply, correct, error, rounds))
        if on_case:
            on_case(number, len(cases))
    return out


def summary(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    rows = []
    for category in dict.fromkeys(o.category for o in outcomes):
        group = [o for o in outcomes if o.category == category]
        rows.append({"category": category, "cases": len(group),
                     "accuracy": round(100 * sum(o.correct for o in group) / len(group), 1),
                     "unparsable": sum(o.error.startswith("unparsable") for o in group),
                     "mean refine rounds": round(sum(o.rounds for o in group) / len(group), 2)})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table; rows with a "setting" (e.g. the refine mode) get that column first."""
    labelled = any("setting" in r for r in rows)
    lines = ["| " + ("setting | " if labelled else "") + "category | cases | accuracy (%) | unparsable | "
             "mean refine rounds |", "|---" * (5 + labelled) + "|"]
    for r in rows:
        lines.append("| " + (f"{r.get('setting', '')} | " if labelled else "") + f"{r['category']} | {r['cases']} | "
                     f"{r['accuracy']} | {r['unparsable']} | {r['mean refine rounds']} |")
    return "\n".join(lines) + "\n\n" + UNPARSABLE_NOTE
