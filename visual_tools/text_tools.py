"""Toolformer's five text tools: Calculator, Calendar, WikiSearch (BM25), QA and MT, as agent tools.

Their `name` is both what the agent writes after `Action:` and the API name in a Toolformer call
(`[Calculator(18 + 12 * 3) -> 54]`).
"""
from __future__ import annotations

import ast
import json
import math
import operator
import os
import re
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path

from dateutil import parser as dateutil_parser

from .base import Input, Tool, ToolInputError

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_CORPUS = ASSETS / "wiki" / "passages.jsonl"

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
MAX_EXPRESSION = 200  # characters
MAX_DIGITS = 30  # a power whose result would have more digits is refused before it is computed


def _safe_eval(node: ast.AST) -> float:
    """Numbers, + - * / ** (bounded) and parentheses; every other node is refused unevaluated."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_safe_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _safe_eval(node.left), _safe_eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(left) > 1 and (
                abs(right) > 1000 or right * math.log10(abs(left)) > MAX_DIGITS):
            raise ToolInputError(f"the power {left:g} ** {right:g} is too large")
        if isinstance(node.op, ast.Div) and right == 0:
            raise ToolInputError("division by zero")
        return _BINARY[type(node.op)](left, right)
    what = type(node).__name__
    if isinstance(node, ast.Name):
        what = f"the name '{node.id}'"
    elif isinstance(node, ast.Attribute):
        what = "attribute access"
    elif isinstance(node, ast.Call):
        what = "a function call"
    raise ToolInputError(f"{what} is not allowed (numbers, + - * / ** and parentheses only)")


def calculate(expression: str) -> str:
    """Evaluate arithmetic safely (Python's `ast`, never `eval`), rounded to 2 places as in Toolformer."""
    text = expression.strip()
    if len(text) > MAX_EXPRESSION:
        raise ToolInputError(f"the expression is longer than {MAX_EXPRESSION} characters")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 658,893 -> 658893
    text = text.replace("×", "*").replace("÷", "/").replace("−", "-").replace("^", "**")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ToolInputError(f"'{expression.strip()}' is not an arithmetic expression") from None
    try:
        value = _safe_eval(tree.body)
    except (OverflowError, RecursionError):
        raise ToolInputError("the result is too large") from None
    if isinstance(value, complex) or not math.isfinite(value):
        raise ToolInputError("the result is not a finite real number")
    value = round(value, 2)
    return str(int(value)) if value == int(value) else str(value)


class Calculator(Tool):
    name = "Calculator"
    description = ("useful when you need to compute an arithmetic expression, like: what is 18 + 12 * 3, "
                   "or how much is 400 / 1400. The input to this tool should be a string, representing an "
                   "expression of numbers, + - * / ** and parentheses")
    purpose = "compute an arithmetic expression written with numbers and + - * / ** ( )"
    inputs = (Input("expression", "text"),)
    output = "text"
    op = "calc"
    backend = "Python's ast: a safe arithmetic evaluator (never eval), 2 decimals"
    phrasings = ("what's {a_words} times {b_words}?", "{a_words} plus {b_words} is what?",
                 "what is {a_words} minus {b_words}", "i bought {b} things at ${a} each, what's the total?",
                 "tickets cost {a} dollars each and we need {b}, how much is that?",
                 "we split a bill of ${a} between {b} people, how much does each pay?",
                 "i had {a} euros and spent {b}, how much is left?", "add {a} and {b}", "multiply {a} by {b}",
                 "hey can you do {expression} real quick", "what is {expression}?", "calculate {expression}",
                 "{expression} = ?", "how much is {expression}", "what's {a} plus {b}",
                 "can you work out {a} times {b}?", "what do i get if i divide {a} by {b}", "{a} minus {b}?",
                 "compute {expression} for me", "quick math: {expression}")

    def forward(self, expression: str) -> str:
        return calculate(expression)

    def report(self, observation: str, tool_input: str) -> str:
        return f"{tool_input.strip().strip('`').strip()} = {observation}"

    def found(self, answer: str, observation: str) -> bool:
        """The number itself, not one that merely starts with it (391 in 3910) nor the model's own sum."""
        return re.search(rf"(?<![\d.]){re.escape(observation)}(?![\d]|\.\d)", answer.replace(",", "")) is not None


class Calendar(Tool):
    name = "Calendar"
    description = ("useful when you need to know today's date or the day of the week, or the weekday of a given "
                   "date. The input to this tool should be an empty string for today, or a date like 2027-03-14")
    purpose = "today's date, or the weekday of a given date"
    inputs = (Input("date", "text", optional=True),)
    output = "text"
    op = "date"
    backend = "the system clock"
    today: Callable[[], date] = date.today
    phrasings = ("what's the date", "hey what day is it today?", "remind me what today's date is",
                 "which day of the week are we on?", "is it the weekend yet?", "what month are we in?",
                 "what's the date today, i lost track", "tell me today's day and date", "what's today's date?",
                 "what day is it", "tell me the date", "which weekday is today?",
                 "do you know what day of the week it is?", "what is the date today", "is today a weekday?",
                 "today's date please")

    def forward(self, date: str = "") -> str:
        if not re.search(r"\d", date):  # nothing, or words ("today", "what day is it"): today
            day = self.today()
            return f"Today is {day:%A}, {day:%B} {day.day}, {day.year}."
        try:  # dateutil reads the ways a date is written ("2027-03-14", "March 14, 2027", "14 Mar 2027")
            day = dateutil_parser.parse(date, default=datetime(self.today().year, 1, 1)).date()
        except (ValueError, OverflowError):
            raise ToolInputError(f"Calendar takes a date such as 2027-03-14, or nothing for today; got '{date}'")\
                from None
        return f"{day.isoformat()} is a {day:%A}."

    def found(self, answer: str, observation: str) -> bool:
        weekday = re.search(r"(Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day", observation)
        return weekday is not None and weekday.group(0).lower() in answer.lower()


def read_rows(path: str | Path) -> list[dict]:
    """Rows with a "text" (and whatever else a JSONL line holds) from a JSONL file, a text file or a folder.

    A text file is split into paragraphs at blank lines; whitespace is normalised; empty texts are left out.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".md", ".jsonl") and p.is_file())
        return [row for file in files for row in read_rows(file)]
    if not path.is_file():
        raise FileNotFoundError(f"no such corpus: {path}")
    content = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".jsonl":
        rows = []
        for number, line in enumerate(content.splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    rows.append({**row, "text": str(row["text"])})
                except (json.JSONDecodeError, KeyError, TypeError):
                    raise ValueError(f"{path}:{number}: not a JSON object with a \"text\" field") from None
    else:
        rows = [{"text": part} for part in re.split(r"\n\s*\n", content)]
    return [{**row, "text": " ".join(row["text"].split())} for row in rows if row["text"].strip()]


def read_texts(path: str | Path) -> list[str]:
    return [row["text"] for row in read_rows(path)]


class WikiSearch(Tool):
    name = "WikiSearch"
    description = ("useful when you need facts about a topic: it returns the best-matching passage of the "
                   "local encyclopedia corpus. The input to this tool should be a string, representing the "
                   "search term")
    purpose = "look up facts: the best-matching passage of a local encyclopedia"
    inputs = (Input("query", "text"),)
    output = "text"
    op = "search"
    backend = "BM25 (bm25s) over a local passage corpus"
    max_chars = 400
    phrasings = ("tell me about {topic}", "what do you know about {topic}?", "search the encyclopedia for {topic}",
                 "give me some facts about {topic}", "look up {topic}", "i'd like to learn about {topic}",
                 "find information on {topic}", "what is {topic}?")

    def __init__(self, device: str = "cpu", checkpoint: str | None = None):
        super().__init__(device)
        # the "checkpoint" of a search tool is its corpus: a JSONL file or a folder of text files
        self.checkpoint = checkpoint or os.environ.get(self.checkpoint_env()) or str(DEFAULT_CORPUS)

    def availability(self) -> tuple[bool, str]:
        if not Path(self.checkpoint).expanduser().exists():
            return False, (f"needs a passage corpus: {self.checkpoint} does not exist; set "
                           f"{self.checkpoint_env()} to a JSONL file (one \"text\" per line) or a folder of .txt")
        return True, ""

    def setup(self) -> None:
        import bm25s
        self.passages = read_texts(self.checkpoint)
        if not self.passages:
            raise ToolInputError(f"the corpus {self.checkpoint} holds no passages")
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize(self.passages, stopwords="en", show_progress=False), show_progress=False)

    def search(self, query: str, k: int = 1) -> list[str]:
        import bm25s
        self.ensure_ready()
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.passages))
        ids, scores = self.index.retrieve(tokens, k=k, show_progress=False)
        return [self.passages[i] for i, s in zip(ids[0], scores[0]) if s > 0]

    def forward(self, query: str) -> str:
        found = self.search(query)
        if not found:
            return f"No passage matches '{query}'."
        return found[0] if len(found[0]) <= self.max_chars else found[0][: self.max_chars].rsplit(" ", 1)[0] + " …"


class QA(Tool):
    name = "QA"
    description = ("useful when you need the answer to a factual question: it reads the best WikiSearch passage "
                   "and answers from it. The input to this tool should be a string, representing the question")
    purpose = "answer a factual question from the best-matching WikiSearch passage"
    inputs = (Input("question", "text"),)
    output = "text"
    op = "qa"
    checkpoints = ("deepset/roberta-base-squad2",)
    params_m = 124
    requires = ("WikiSearch",)
    backend = "extractive QA (transformers) over the top WikiSearch passage"
    max_answer_tokens = 30

    def setup(self) -> None:
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        from .checkpoints import locate
        folder = locate(self.checkpoint)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForQuestionAnswering.from_pretrained(folder, dtype=self.dtype).to(self.device).eval()

    def forward(self, question: str) -> str:
        passages = self.parts["WikiSearch"].search(question)
        if not passages:
            return f"No passage of the corpus is about '{question}'."
        # transformers 5 has no question-answering pipeline any more: the span search is ours (a few lines)
        enc = self.tokenizer(question, passages[0], truncation="only_second", max_length=384,
                             return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].tolist()
        context = [i for i, s in enumerate(enc.sequence_ids(0)) if s == 1]
        import torch
        with torch.inference_mode():
            out = self.model(**{k: v.to(self.device) for k, v in enc.items()})
        start, end = out.start_logits[0].float().cpu(), out.end_logits[0].float().cpu()
        best, span = -math.inf, (context[0], context[0])
        for i in context:
            for j in context:
                if i <= j < i + self.max_answer_tokens and start[i] + end[j] > best:
                    best, span = float(start[i] + end[j]), (i, j)
        answer = passages[0][offsets[span[0]][0]: offsets[span[1]][1]].strip()
        return answer or "No answer found in the passage."


# langdetect's ISO 639-1 codes -> NLLB-200's language codes (the languages NLLB users meet most)
NLLB_CODES = {"ar": "arb_Arab", "bg": "bul_Cyrl", "ca": "cat_Latn", "cs": "ces_Latn", "da": "dan_Latn",
              "de": "deu_Latn", "el": "ell_Grek", "en": "eng_Latn", "es": "spa_Latn", "fa": "pes_Arab",
              "fi": "fin_Latn", "fr": "fra_Latn", "he": "heb_Hebr", "hi": "hin_Deva", "hu": "hun_Latn",
              "id": "ind_Latn", "it": "ita_Latn", "ja": "jpn_Jpan", "ko": "kor_Hang", "nl": "nld_Latn",
              "no": "nob_Latn", "pl": "pol_Latn", "pt": "por_Latn", "ro": "ron_Latn", "ru": "rus_Cyrl",
              "sv": "swe_Latn", "th": "tha_Thai", "tr": "tur_Latn", "uk": "ukr_Cyrl", "vi": "vie_Latn",
              "zh-cn": "zho_Hans", "zh-tw": "zho_Hant"}


def detect_language(text: str) -> str:
    """The ISO 639-1 code langdetect finds (deterministic: seeded), "unknown" when it cannot tell."""
    from langdetect import DetectorFactory, LangDetectException, detect
    DetectorFactory.seed = 0
    try:
        return detect(text)
    except LangDetectException:
        return "unknown"


def foreign_segments(text: str, min_words: int = 3) -> list[str]:
    """Segments (split at punctuation) of `min_words`+ words that langdetect finds, with p > 0.9, not English."""
    from langdetect import DetectorFactory, LangDetectException, detect_langs
    DetectorFactory.seed = 0
    found = []
    for segment in re.split(r"[,.;:!?()\"“”«»]", text):
        if len(segment.split()) >= min_words:
            try:
                best = detect_langs(segment)[0]
            except LangDetectException:
                continue
            if best.lang != "en" and best.prob > 0.9:
                found.append(segment.strip())
    return found


class MT(Tool):
    name = "MT"
    description = ("useful when you need to translate a text into English; the language of the input is "
                   "detected. The input to this tool should be a string, representing the text to translate")
    purpose = "translate a text into English (its language is detected)"
    inputs = (Input("text", "text"),)
    output = "text"
    op = "mt"
    checkpoints = ("facebook/nllb-200-distilled-600M",)
    params_m = 615
    backend = "NLLB-200 (transformers seq2seq) + langdetect"
    max_new_tokens = 200

    def setup(self) -> None:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        from .checkpoints import locate
        folder = locate(self.checkpoint)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForSeq2SeqLM.from_pretrained(folder, dtype=self.dtype).to(self.device).eval()

    def forward(self, text: str) -> str:
        language = detect_language(text)
        if language == "en":
            return text  # already English: nothing to translate
        vocab = self.tokenizer.get_vocab()
        source = NLLB_CODES.get(language)
        if source in vocab and hasattr(self.tokenizer, "src_lang"):
            self.tokenizer.src_lang = source  # NLLB prefixes the source language token
        kwargs = {"forced_bos_token_id": vocab["eng_Latn"]} if "eng_Latn" in vocab else {}
        enc = self.tokenizer(text, return_tensors="pt", truncation=True, max_length=512).to(self.device)
        import torch
        with torch.inference_mode():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, num_beams=1, **kwargs)
        return self.tokenizer.decode(out[0], skip_special_tokens=True).strip()
