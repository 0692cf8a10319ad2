"""Toolformer's self-supervised annotation: positions, sampled calls, execution, the loss filter, C*.

For each text x and tool: the tool's few-shot prompt P(x); positions i where P(`[` | P(x), x<i) > τs (the top k);
m calls sampled at each; each executed; a call is kept iff L⁻ − L⁺ ≥ τf, where L is the weighted loss of the
5 tokens from i on with the call given as a prefix of the text (the paper's footnote 3), L⁺ with the result and
L⁻ = min(no call, the call with an empty result). Every candidate is logged; the kept ones are merged into C*.
"""
from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import date

import torch
from transformers import DynamicCache

from visual_tools import Tool, ToolInputError
from visual_tools.text_tools import foreign_segments

from .lm import call_token_ids, closing_token_ids, start_ids
from .prompts import CALL_END, PROMPTS, SETTINGS, WEIGHTS, Settings, format_call, parse_call

NUMBER = re.compile(r"\d+(?:\.\d+)?")
CALC_WORDS = re.compile(r"=|\b(equals?|equal to|total of|average of|in total|sum of|makes|leaving|per)\b", re.I)
DATE_WORDS = re.compile(r"\b(today|tomorrow|yesterday|now|current|this (?:year|month|week)|"
                        r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|"
                        r"may|june|july|august|september|october|november|december|days? (?:left|until|from))\b", re.I)


def _numbers(text: str) -> list[float]:
    return [float(n) for n in NUMBER.findall(text.replace(",", ""))]


def prefilter(tool: str, text: str) -> bool:
    """The paper's heuristics: which texts are worth annotating for a tool (cheap, before any model call)."""
    if tool == "Calculator":  # ≥ 3 numbers where one follows from two, or words that announce a result
        nums = _numbers(text)[:30]
        if len(nums) < 3:
            return False
        results = {round(f(a, b), 2) for a in nums for b in nums
                   for f in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
                             lambda a, b: a / b if b else float("nan"))}
        return bool(CALC_WORDS.search(text)) or any(round(n, 2) in results for n in nums)
    if tool == "Calendar":
        return bool(DATE_WORDS.search(text))
    if tool == "MT":  # a segment in another language, as the paper's (fastText) language check
        return bool(foreign_segments(text))
    return True


@dataclass
class Candidate:
    """One sampled call at one position of one text, with its result, losses and verdict."""
    text_id: int
    tool: str
    position: int  # index of the token of x the call goes before
    p: float  # P(`[`) at that position
    args: str = ""
    result: str | None = None
    l_plus: float | None = None
    l_none: float | None = None
    l_empty: float | None = None
    kept: bool = False
    reason: str = ""  # why it was dropped before or by the filter

    @property
    def l_minus(self) -> float | None:
        return None if self.l_none is None else min(self.l_none, self.l_empty)

    @property
    def gain(self) -> float | None:
        return None if self.l_plus is None else self.l_minus - self.l_plus

    def row(self) -> dict:
        return {**asdict(self), "l_minus": self.l_minus, "gain": self.gain,
                "call": format_call(self.tool, self.args, self.result)}


@dataclass
class Report:
    texts: int = 0
    per_tool: dict[str, Counter] = field(default_factory=dict)

    def count(self, tool: str, key: str, n: int = 1) -> None:
        self.per_tool.setdefault(tool, Counter())[key] += n

    COLUMNS = ("texts passing the pre-filter", "positions", "calls sampled", "never closed", "malformed",
               "refused by the tool", "inputs only after the call", "scored", "kept")

    def markdown(self) -> str:
        lines = ["| tool | " + " | ".join(self.COLUMNS) + " |", "|---" * (len(self.COLUMNS) + 1) + "|"]
        for tool, counts in self.per_tool.items():
            lines.append(f"| {tool} | " + " | ".join(str(counts[c]) for c in self.COLUMNS) + " |")
        return f"{self.texts} texts\n\n" + "\n".join(lines)


@torch.inference_mode()
def encode_head(model, head_ids: list[int]) -> DynamicCache:
    """The KV cache of a prompt's fixed few-shot head: computed once per tool, copied for every text."""
    out = model(torch.tensor([head_ids], device=model.device), cache=DynamicCache(config=model.config), use_cache=True)
    return out.cache


@torch.inference_mode()
def find_positions(model, head: DynamicCache, rest_ids: list[int], x_ids: list[int], bracket: list[int],
                   settings: Settings, allowed: set[int] | None = None
                   ) -> tuple[list[tuple[int, float]], DynamicCache]:
    """Positions i of x (the call goes before x_i; only `allowed` ones if given) with P(`[`) > τs, the most
    probable k of them; and the KV cache of P(x) + x, from which every position's calls are then sampled.

    P(x) = the head (cached) + `rest_ids` (this text's "Input: x\nOutput:").
    """
    cache = copy.deepcopy(head)
    out = model(torch.tensor([rest_ids + x_ids], device=model.device), cache=cache, use_cache=True)
    probs = out.logits[0, len(rest_ids) - 1: -1].float().softmax(-1)[:, bracket].sum(-1)
    order = probs.argsort(descending=True).tolist()
    return [(i, float(probs[i])) for i in order if probs[i] > settings.tau_s and (allowed is None or i in allowed)
            ][: settings.positions], out.cache


@torch.inference_mode()
def sample_calls(model, tokenizer, prefix_ids: list[int], cache: DynamicCache, cached: int, m: int,
                 max_tokens: int, closing: list[int]) -> list[str | None]:
    """m continuations of `prefix_ids`, sampled in one batched `generate` that starts from the first `cached`
    tokens' KV cache (a copy: the caller's cache is reused for the next position) and ends a sample at a
    `closing` token (one holding `]`); None where `]` never came."""
    cache = copy.deepcopy(cache)
    cache.crop(cached - cache.get_seq_length())  # a negative count: the tokens to drop
    cache.batch_repeat_interleave(m)
    ids = torch.tensor([prefix_ids] * m, device=model.device)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), cache=cache, do_sample=True,
                         temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=max_tokens, eos_token_id=closing,
                         pad_token_id=tokenizer.pad_token_id)
    texts = tokenizer.batch_decode(out[:, len(prefix_ids):], skip_special_tokens=True)
    return [text.split(CALL_END, 1)[0] if CALL_END in text else None for text in texts]


def execute(tool: Tool, args: str) -> tuple[str | None, str]:
    """(result, "") or (None, why the tool refused): an invalid call gets no result and is dropped."""
    try:
        result = tool(**tool.parse_input(args))
    except ToolInputError as exc:
        return None, f"refused by the tool: {exc}"
    except Exception as exc:  # a tool that fails is logged, never fatal to the run
        return None, f"refused by the tool: {type(exc).__name__}: {exc}"
    return str(result), ""


def _share_prefixes(seqs: list[tuple[int, ...]]) -> dict[tuple[int, ...], tuple[int, ...]]:
    """Map every sequence to the longest one it is a prefix of (itself if none): one forward pass serves all
    (the no-call text at several positions, the same call sampled at several positions of a text)."""
    reps: list[tuple[int, ...]] = []
    owner = {}
    for seq in sorted(set(seqs), key=len, reverse=True):
        rep = next((r for r in reps if r[: len(seq)] == seq), None)
        if rep is None:
            reps.append(seq)
            rep = seq
        owner[seq] = rep
    return owner


@torch.inference_mode()
def weighted_losses(model, sequences: list[tuple[list[int], int]], pad_id: int, batch_size: int = 32,
                    share: bool = True) -> list[float]:
    """Σ_t w_t · −log p(ids[s + t] | ids[:s + t]) for each (ids, s), t < 5, in right-padded batches.

    Each sequence should end at s + 5 (later tokens cannot change the loss). `share`: a sequence that is a
    prefix of another (or equal to it) is read from that one's forward pass, and batches are length-sorted;
    without it every sequence gets its own row, in the order given.
    """
    keys = [tuple(ids) for ids, _ in sequences]
    owner = _share_prefixes(keys) if share else {}
    rows = sorted(set(owner.values()), key=len) if share else keys
    readers: dict[int, list[int]] = {}  # row -> the sequences read from it
    index = {rep: n for n, rep in enumerate(rows)} if share else {}
    for n, key in enumerate(keys):
        readers.setdefault(index[owner[key]] if share else n, []).append(n)
    losses = [0.0] * len(sequences)
    weights = torch.tensor(WEIGHTS, device=model.device)
    for chunk_start in range(0, len(rows), batch_size):
        chunk = range(chunk_start, min(chunk_start + batch_size, len(rows)))
        width = max(len(rows[r]) for r in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long, device=model.device)
        mask = torch.zeros_like(ids)
        for row, r in enumerate(chunk):
            ids[row, : len(rows[r])] = torch.tensor(rows[r], device=model.device)
            mask[row, : len(rows[r])] = 1
        logits = model(input_ids=ids, attention_mask=mask).logits
        for row, r in enumerate(chunk):
            for n in readers.get(r, []):
                seq, s = sequences[n]
                targets = torch.tensor(seq[s: s + len(WEIGHTS)], device=model.device)
                if len(targets) == 0:
                    continue
                logp = logits[row, s - 1: s - 1 + len(targets)].float().log_softmax(-1)
                losses[n] = float((weights[: len(targets)] * -logp.gather(1, targets[:, None])[:, 0]).sum())
    return losses


def candidate_sequences(tokenizer, cand: Candidate, x_ids: list[int]) -> list[tuple[list[int], int]]:
    """The three sequences of a candidate: call with result, call with empty result, no call (each cut at i+5)."""
    start = start_ids(tokenizer)
    tail = x_ids[: cand.position + len(WEIGHTS)]
    seqs = []
    for result in (cand.result, ""):
        prefix = start + tokenizer(format_call(cand.tool, cand.args, result), add_special_tokens=False)["input_ids"]
        seqs.append((prefix + tail, len(prefix) + cand.position))
    seqs.append((start + tail, len(start) + cand.position))
    return seqs


def score(model, tokenizer, cands: list[Candidate], x_ids: dict[int, list[int]], *, batched: bool = True,
          batch_size: int = 32) -> None:
    """Fill L⁺, L(no call), L(empty result) of every candidate.

    Batched: the sequences of all candidates in length-sorted batches, each computed once even when it is a
    prefix of another (the no-call text at every position of a text, a call sampled again or at a later
    position). Unbatched: one forward pass per candidate (its three sequences).
    """
    per_cand = [candidate_sequences(tokenizer, c, x_ids[c.text_id]) for c in cands]
    if batched:
        flat = weighted_losses(model, [seq for seqs in per_cand for seq in seqs], tokenizer.pad_token_id, batch_size)
        values = [flat[3 * n: 3 * n + 3] for n in range(len(cands))]
    else:
        values = [weighted_losses(model, seqs, tokenizer.pad_token_id, len(seqs), share=False) for seqs in per_cand]
    for cand, (plus, empty, none) in zip(cands, values):
        cand.l_plus, cand.l_empty, cand.l_none = plus, empty, none


def check_sample(cand: Candidate, sample: str | None, tool: Tool, before: str) -> Candidate:
    """Parse a sampled call (the text after `Name(`), check it, execute it: its result, or why it is dropped."""
    parsed = parse_call(f"{cand.tool}({sample}") if sample is not None else None
    if sample is None:
        cand.reason = "never closed"
    elif parsed is None:
        cand.reason, cand.args = "malformed", sample.strip()
    else:
        cand.args = parsed[1] if tool.required() else ""  # `[Calendar()]`: the paper's Calendar takes no input
        if cand.tool == "Calculator" and any(v not in _numbers(before) for v in _numbers(cand.args)):
            cand.reason = "inputs only after the call"
        else:
            cand.result, cand.reason = execute(tool, cand.args)
    return cand


def annotate(rows: list[dict], tools: dict[str, Tool], model, tokenizer, *, settings: dict[str, Settings] | None = None,
             max_call_tokens: int = 24, max_text_tokens: int = 256, batch_size: int = 32, seed: int = 0,
             on_progress: Callable[[int, int], None] | None = None) -> tuple[list[Candidate], Report]:
    """Annotate `rows` (dicts with "text", optionally "date") for every tool in `tools`; all candidates returned."""
    settings = {**SETTINGS, **(settings or {})}
    unknown = [name for name in tools if name not in PROMPTS]
    if unknown:
        raise ValueError(f"no Toolformer prompt for {unknown}; tools: {', '.join(PROMPTS)}")
    if not rows:
        raise ValueError("the corpus holds no texts")
    torch.manual_seed(seed)
    bracket, closing = call_token_ids(tokenizer), closing_token_ids(tokenizer)
    heads = {}  # per tool: the few-shot head's ids and KV cache
    for name in tools:
        head_text = PROMPTS[name].split("Input: {text}")[0]
        head_ids = tokenizer(head_text, add_special_tokens=False)["input_ids"]
        heads[name] = head_ids, encode_head(model, head_ids)
    report, cands = Report(texts=len(rows)), []
    x_ids = {n: tokenizer(" " + row["text"], add_special_tokens=False)["input_ids"][:max_text_tokens]
             for n, row in enumerate(rows)}
    jobs = [(name, n) for name in tools for n, row in enumerate(rows) if prefilter(name, row["text"])]
    for name in tools:
        report.count(name, "texts passing the pre-filter", sum(job[0] == name for job in jobs))
    for done, (name, n) in enumerate(jobs, 1):
        tool, conf, text, ids = tools[name], settings[name], rows[n]["text"], x_ids[n]
        if hasattr(tool, "today"):  # the Calendar answers with the document's date, as in the paper
            tool.today = (lambda d=rows[n]["date"]: date.fromisoformat(d)) if rows[n].get("date") else date.today
        head_ids, head = heads[name]
        rest = f"Input: {text}" + PROMPTS[name].split("Input: {text}")[1]  # "Input: x\nOutput:"
        rest_ids = tokenizer(rest, add_special_tokens=False)["input_ids"]
        prompt_ids = head_ids + rest_ids
        fresh = []
        # a call goes before a word (tokenizers that split numbers into digits would put it inside one);
        # for the Calculator, after two numbers at least (else its inputs come after it, and it is dropped)
        allowed = {i for i in range(len(ids)) if tokenizer.decode(ids[i: i + 1]).startswith(" ")}
        if name == "Calculator":
            allowed = {i for i in allowed if len(_numbers(tokenizer.decode(ids[:i]))) >= 2}
        positions, cache = find_positions(model, head, rest_ids, ids, bracket, conf, allowed)
        opening = tokenizer(f"{name}(", add_special_tokens=False)["input_ids"]
        for position, p in positions:
            report.count(name, "positions")
            # the API name is given after `[` (the paper samples it too): each prompt is for one tool anyway,
            # and small models otherwise spend most samples on other names
            prefix = prompt_ids + ids[:position] + [bracket[0]] + opening
            for sample in sample_calls(model, tokenizer, prefix, cache, len(prompt_ids) + position,
                                       conf.samples, max_call_tokens, closing):
                cand = check_sample(Candidate(n, name, position, p), sample, tool, tokenizer.decode(ids[:position]))
                report.count(name, "calls sampled")
                if cand.reason:
                    report.count(name, cand.reason.split(":")[0])
                else:
                    fresh.append(cand)
                cands.append(cand)
        score(model, tokenizer, fresh, x_ids, batch_size=batch_size)
        for cand in fresh:
            cand.kept = cand.gain >= conf.tau_f
            cand.reason = "" if cand.kept else f"L⁻ − L⁺ = {cand.gain:.3f} < τf = {conf.tau_f}"
            report.count(name, "scored")
            report.count(name, "kept", cand.kept)
        if on_progress:
            on_progress(done, len(jobs))
    for tool in tools.values():
        if hasattr(tool, "today"):
            tool.today = date.today  # back to the clock
    return cands, report


def merge(rows: list[dict], cands: Iterable[Candidate], tokenizer) -> list[dict]:
    """C*: every text (the original kept beside), with its kept calls inserted — the best one per position."""
    best: dict[tuple[int, int], Candidate] = {}
    for cand in cands:
        key = (cand.text_id, cand.position)
        if cand.kept and (key not in best or cand.gain > best[key].gain):
            best[key] = cand
    out = []
    for n, row in enumerate(rows):
        ids = tokenizer(" " + row["text"], add_special_tokens=False)["input_ids"]
        calls = sorted((c for (t, _), c in best.items() if t == n), key=lambda c: c.position)
        if not calls:
            out.append({"text": row["text"], "original": row["text"], "calls": []})
            continue
        pieces, last = [], 0
        for call in calls:
            pieces += [tokenizer.decode(ids[last: call.position]), " " + format_call(call.tool, call.args, call.result)]
            last = call.position
        pieces.append(tokenizer.decode(ids[last:]))
        out.append({"text": "".join(pieces).strip(), "original": row["text"],
                    "calls": [{"tool": c.tool, "args": c.args, "result": c.result, "position": c.position,
                               "gain": round(c.gain, 4)} for c in calls]})
    return out
