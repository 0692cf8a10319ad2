# ruff: noqa: E501  (the paper's prompts, verbatim, one example per line)
"""Toolformer's call syntax, its few-shot annotation prompts (the paper's appendix A.2) and per-tool settings."""
from __future__ import annotations

import re
from dataclasses import dataclass

CALL_START, RESULT_SEP, CALL_END = "[", "->", "]"
ANSWER_PROMPT = "Question: {question}\nAnswer:"  # how a question is put to the model (math evaluation, chat)
# the loss weights of the 5 tokens after a call: max(0, 1 - 0.2 t), normalised (Toolformer section 2)
_RAW = [max(0.0, 1 - 0.2 * t) for t in range(5)]
WEIGHTS = [w / sum(_RAW) for w in _RAW]

CALL_RE = re.compile(r"^\s*([A-Za-z]+)\((.*)\)\s*$", re.S)
CALL_SPAN_RE = re.compile(r"\[\s*[A-Za-z]+\(.*?\)\s*(?:->[^\]]*)?\]", re.S)


def format_call(tool: str, args: str, result: str | None = None) -> str:
    """`[Calculator(400 / 1400) -> 0.29]`; result None: the call alone; "" : the call with an empty result."""
    return f"[{tool}({args})]" if result is None else f"[{tool}({args}) -> {result}]"


def parse_call(text: str) -> tuple[str, str] | None:
    """`Calculator(18 + 12 * 3)` -> ("Calculator", "18 + 12 * 3"); quotes around the argument are dropped."""
    match = CALL_RE.match(text)
    if not match:
        return None
    args = match.group(2).strip()
    if len(args) >= 2 and args[0] == args[-1] and args[0] in "'\"":
        args = args[1:-1]
    return match.group(1), args


def strip_calls(text: str) -> str:
    """The text without its call spans: what the model itself wrote."""
    return " ".join(CALL_SPAN_RE.sub(" ", text).split())


@dataclass(frozen=True)
class Settings:
    """τs (position threshold), k (positions kept per text), m (calls sampled per position), τf (filter)."""
    tau_s: float
    positions: int
    samples: int
    tau_f: float


# the paper's settings (section 4.1)
SETTINGS = {"Calculator": Settings(0.0, 20, 10, 0.5), "MT": Settings(0.0, 20, 10, 0.5),
            "Calendar": Settings(0.05, 5, 5, 1.0), "QA": Settings(0.05, 5, 5, 1.0),
            "WikiSearch": Settings(0.05, 5, 5, 1.0)}

# The few-shot prompts P(x) of the paper's appendix A.2; "{text}" is the text to annotate.
PROMPTS = {
    "Calculator": """Your task is to add calls to a Calculator API to a piece of text. The calls should help you get information required to complete the text. You can call the API by writing "[Calculator(expression)]" where "expression" is the expression to be computed. Here are some examples of API calls:
Input: The number in the next term is 18 + 12 x 3 = 54.
Output: The number in the next term is 18 + 12 x 3 = [Calculator(18 + 12 * 3)] 54.
Input: The population is 658,893 people. This is 11.4% of the national average of 5,763,868 people.
Output: The population is 658,893 people. This is 11.4% of the national average of [Calculator(658,893 / 11.4%)] 5,763,868 people.
Input: A total of 252 qualifying matches were played, and 723 goals were scored (an average of 2.87 per match). This is three times less than the 2169 goals last year.
Output: A total of 252 qualifying matches were played, and 723 goals were scored (an average of [Calculator(723 / 252)] 2.87 per match). This is twenty goals more than the [Calculator(723 - 20)] 703 goals last year.
Input: I went to Paris in 1994 and stayed there until 2011, so in total, it was 17 years.
Output: I went to Paris in 1994 and stayed there until 2011, so in total, it was [Calculator(2011 - 1994)] 17 years.
Input: From this, we have 4 * 30 minutes = 120 minutes.
Output: From this, we have 4 * 30 minutes = [Calculator(4 * 30)] 120 minutes.
Input: {text}
Output:""",
    "Calendar": """Your task is to add calls to a Calendar API to a piece of text. The API calls should help you get information required to complete the text. You can call the API by writing "[Calendar()]" Here are some examples of API calls:
Input: Today is the first Friday of the year.
Output: Today is the first [Calendar()] Friday of the year.
Input: The president of the United States is Joe Biden.
Output: The president of the United States is [Calendar()] Joe Biden.
Input: The current day of the week is Wednesday.
Output: The current day of the week is [Calendar()] Wednesday.
Input: The number of days from now until Christmas is 30.
Output: The number of days from now until Christmas is [Calendar()] 30.
Input: The store is never open on the weekend, so today it is closed.
Output: The store is never open on the weekend, so today [Calendar()] it is closed.
Input: {text}
Output:""",
    "QA": """Your task is to add calls to a Question Answering API to a piece of text. The questions should help you get information required to complete the text. You can call the API by writing "[QA(question)]" where "question" is the question you want to ask. Here are some examples of API calls:
Input: Joe Biden was born in Scranton, Pennsylvania.
Output: Joe Biden was born in [QA("Where was Joe Biden born?")] Scranton, [QA("In which state is Scranton?")] Pennsylvania.
Input: Coca-Cola, or Coke, is a carbonated soft drink manufactured by the Coca-Cola Company.
Output: Coca-Cola, or [QA("What other name is Coca-Cola known by?")] Coke, is a carbonated soft drink manufactured by [QA("Who manufactures Coca-Cola?")] the Coca-Cola Company.
Input: {text}
Output:""",
    "WikiSearch": """Your task is to complete a given piece of text. You can use a Wikipedia Search API to look up information. You can do so by writing "[WikiSearch(term)]" where "term" is the search term you want to look up. Here are some examples of API calls:
Input: The colors on the flag of Ghana have the following meanings: red is for the blood of martyrs, green for forests, and gold for mineral wealth.
Output: The colors on the flag of Ghana have the following meanings: red is for [WikiSearch("Ghana flag red meaning")] the blood of martyrs, green for forests, and gold for mineral wealth.
Input: But what are the risks during production of nanomaterials? Some nanomaterials may give rise to various kinds of lung damage.
Output: But what are the risks during production of nanomaterials? [WikiSearch("nanomaterial production risks")] Some nanomaterials may give rise to various kinds of lung damage.
Input: Metformin is the first-line drug for patients with type 2 diabetes and obesity.
Output: Metformin is the first-line drug for [WikiSearch("Metformin first-line drug")] patients with type 2 diabetes and obesity.
Input: {text}
Output:""",
    "MT": """Your task is to complete a given piece of text by using a Machine Translation API. You can do so by writing "[MT(text)]" where text is the text to be translated into English. Here are some examples:
Input: He has published one book: O homem suprimido ("The Supressed Man")
Output: He has published one book: O homem suprimido [MT(O homem suprimido)] ("The Supressed Man")
Input: In Morris de Jonge's Jeschuah, der klassische jüdische Mann, there is a description of a Jewish writer
Output: In Morris de Jonge's Jeschuah, der klassische jüdische Mann [MT(der klassische jüdische Mann)], there is a description of a Jewish writer
Input: 南京高淳县住房和城乡建设局 城市新区设计 a plane of reference Gaochun is one of seven districts of the provincial capital Nanjing
Output: [MT(南京高淳县住房和城乡建设局 城市新区设计)] a plane of reference Gaochun is one of seven districts of the provincial capital Nanjing
Input: {text}
Output:""",
}
