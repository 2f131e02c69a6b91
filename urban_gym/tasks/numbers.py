"""Reading the number an answer states: digits inside text and English number words.

A counting task's answer is scored as a number (mean relative accuracy, count accuracy),
but a model answers in words as often as in digits: 360CityArena's own example answer to
"How many vending machines are there along the road up to the next crosswalk?" is
"There are four." (its Fig. 2). :func:`read_number` reads such answers.

What it reads:

* **digits** anywhere in the text: ``"4"``, ``"I counted 4 signs"``, ``"-3"``, ``"2.5"``;
  a comma followed by three digits groups thousands (``"1,200"`` is 1200), a comma
  followed by one, two or four or more digits is a decimal comma (``"2,5"`` is 2.5). Digits
  glued to letters are not a count: ordinals and units (``"4th"``, ``"50m"``) and labels
  (``"B2"``) are skipped.
* **number words** zero to ninety-nine: ``"four"``, ``"twelve"``, ``"twenty-one"`` or
  ``"twenty one"`` (a tens word and a unit joined by a hyphen or blanks); ``"a dozen"`` /
  ``"one dozen"`` (12), ``"half a dozen"`` (6) and ``"<n> dozen"`` (12 n, n one to nine).
  ``"one"`` used as a pronoun -- after "the", "this", "that", "each", "every", "any",
  "which", or before "of" -- is not a number.
* **zero words**: ``"zero"`` and ``"none"`` are 0; ``"no"`` directly before a word (``"There
  are no vending machines"``) is 0 only when the answer states no other number (``"No, there
  are four"`` is 4) -- alone (``"No."``) it is no number.

Which number, when the answer states several: the first one after the last *answer
marker* that has a number after it -- ``answer``, ``total``, ``altogether``, ``in all``,
``=``, ``equals`` (``"3 on the left, 4 on the right; total: 7"`` is 7) -- else the last
number stated (``"3 on the left and 4 on the right, so 7"`` is 7; a range ``"4-5"`` or
``"four or five"`` is 5). No number at all: None.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

#: Number words below twenty.
UNITS: dict[str, int] = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
#: Tens words.
TENS: dict[str, int] = {
    w: 10 * i
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)
}
#: Words after which "one" is a pronoun, not a number.
PRONOUN_BEFORE_ONE = frozenset("the this that each every any which".split())
#: Single words that mark the number after them as the answer.
MARKER_WORDS = frozenset({"answer", "total", "altogether", "equals"})

_TOKEN = re.compile(
    r"(?P<num>(?:(?<![\w.])[-\u2212])?(?<![^\W_])\d+(?:(?:,\d{3})+(?![\d,]))?(?:[.,]\d+)?"
    r"(?![^\W_]))"
    r"|(?P<word>[^\W\d_]+)"
    r"|(?P<eq>=)"
)
_JOIN = re.compile(r"[\s\-\u2010\u2011]*")  # between "twenty" and "one"
_BLANK = re.compile(r"\s+")  # between "no" and its noun


@dataclass(frozen=True)
class _Token:
    kind: str  # "num", "word" or "eq"
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Found:
    value: float
    start: int
    weak: bool = False  # "no" before a word: 0 only when nothing else is stated


def _tokens(text: str) -> list[_Token]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "word"
        out.append(_Token(kind, m.group(0).casefold(), m.start(), m.end()))
    return out


def _digits(text: str) -> float | None:
    t = text.replace("\u2212", "-")
    if re.fullmatch(r"-?\d+(?:,\d{3})+(?:\.\d+)?", t):  # thousands grouped by commas
        t = t.replace(",", "")
    v = float(t.replace(",", "."))  # else a decimal comma
    return v if math.isfinite(v) else None


def _words_number(toks: list[_Token], i: int, text: str) -> tuple[float, int] | None:
    """The number that number words starting at token ``i`` state, and the index after
    them; None when token ``i`` starts none.
    """
    w = toks[i].text

    def word(j: int) -> str | None:
        return toks[j].text if j < len(toks) and toks[j].kind == "word" else None

    def joined(j: int) -> bool:  # tokens j-1 and j separated by blanks or a hyphen only
        return _JOIN.fullmatch(text[toks[j - 1].end : toks[j].start]) is not None

    if w == "half" and word(i + 1) == "a" and word(i + 2) == "dozen":
        return 6.0, i + 3
    if w == "a" and word(i + 1) == "dozen":
        return 12.0, i + 2
    if w in TENS:
        nxt = word(i + 1)
        if nxt is not None and 1 <= UNITS.get(nxt, 0) <= 9 and joined(i + 1):
            return float(TENS[w] + UNITS[nxt]), i + 2
        return float(TENS[w]), i + 1
    if w in UNITS:
        if w == "one" and (
            (i > 0 and toks[i - 1].text in PRONOUN_BEFORE_ONE) or word(i + 1) == "of"
        ):
            return None
        if word(i + 1) == "dozen" and 1 <= UNITS[w] <= 9:
            return float(12 * UNITS[w]), i + 2
        return float(UNITS[w]), i + 1
    if w == "none":
        return 0.0, i + 1
    return None


def _scan(text: str) -> tuple[list[_Found], list[int]]:
    """The numbers ``text`` states (in order) and where its answer markers end."""
    toks = _tokens(text)
    found: list[_Found] = []
    markers: list[int] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "num":
            v = _digits(t.text)
            if v is not None:
                found.append(_Found(v, t.start))
            i += 1
            continue
        if t.kind == "eq" or t.text in MARKER_WORDS:
            markers.append(t.end)
            i += 1
            continue
        if t.text == "in" and i + 1 < len(toks) and toks[i + 1].text == "all":
            markers.append(toks[i + 1].end)
            i += 2
            continue
        if t.text == "no" and i + 1 < len(toks) and toks[i + 1].kind == "word":
            if _BLANK.fullmatch(text[t.end : toks[i + 1].start]):
                found.append(_Found(0.0, t.start, weak=True))
            i += 1
            continue
        got = _words_number(toks, i, text)
        if got is None:
            i += 1
            continue
        value, i = got
        found.append(_Found(value, t.start))
    return found, markers


def read_number(value: object) -> float | None:
    """The number an answer states (see the module docstring for the rules), or None.

    Numbers pass through (NaN and the infinities give None; a bool is no number).

    Examples:
        >>> read_number("There are four.")
        4.0
        >>> read_number("I counted 4 signs")
        4.0
        >>> read_number("twenty-one")
        21.0
        >>> read_number("3 on the left and 4 on the right, so 7 in total")
        7.0
        >>> read_number("Answer: 7 (within 50 m)")
        7.0
        >>> read_number("There are no vending machines.")
        0.0
        >>> read_number("No.") is None
        True
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    text = str(value)
    found, markers = _scan(text)
    strong = [f for f in found if not f.weak]
    if not strong:
        return found[-1].value if found else None
    for m in reversed(markers):
        after = [f for f in strong if f.start >= m]
        if after:
            return after[0].value
    return strong[-1].value


__all__ = ["MARKER_WORDS", "PRONOUN_BEFORE_ONE", "TENS", "UNITS", "read_number"]
