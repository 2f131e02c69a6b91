"""The characters of every environment's ``Text`` observations, in one place.

A city's names come in any script (Cyrillic, CJK, Arabic, ...), and the instructions,
options and stop names of its tasks carry them. Each environment's ``Text`` spaces use
:func:`task_charset`: :data:`BASE_CHARSET` (what the environments write themselves) plus
every character of the loaded tasks' texts, so a suite loads in any script while the space
stays small (Gymnasium's ``Text`` keeps an index of every character, and samples from
them, so a charset of all of Unicode -- 1.1 million code points -- would cost memory and
time). Text an environment shows that the charset lacks (an agent's own bad input echoed
in a notice) is written with ``?`` in place of those characters by :func:`clean_text`.

Surrogate code points (U+D800..U+DFFF) are never in a charset: a lone surrogate cannot be
encoded as UTF-8, so it would break any log or record the observation is written to.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Iterator
from typing import Any

#: Characters every environment may write on its own: printable ASCII (with tab and
#: newline), Latin-1, Latin Extended-A and common typographic punctuation.
BASE_CHARSET: frozenset[str] = frozenset(
    set(string.printable)
    | {chr(c) for c in range(0xA0, 0x180)}
    | set("\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2022\u00b7\u00ab\u00bb\u00b0")
)

#: The replacement for a character outside a space's charset.
REPLACEMENT = "?"


def is_surrogate(ch: str) -> bool:
    """Whether ``ch`` is a UTF-16 surrogate code point (not encodable as UTF-8)."""
    return "\ud800" <= ch <= "\udfff"


def text_charset(texts: Iterable[str]) -> frozenset[str]:
    """:data:`BASE_CHARSET` plus every character of ``texts`` (surrogates left out)."""
    chars = set(BASE_CHARSET)
    for text in texts:
        chars.update(str(text))
    return frozenset(c for c in chars if not is_surrogate(c))


def task_texts(task: Any) -> Iterator[str]:
    """Every text of a :class:`~urban_gym.tasks.spec.TaskSpec` an environment may show:
    the instruction, the options and answer, the goal's name and its stops' names, and
    the labels of closures.
    """
    yield str(task.instruction)
    yield from (str(o) for o in task.options)
    if isinstance(task.answer, str):
        yield task.answer
    goal = task.goal if isinstance(task.goal, dict) else {}
    if isinstance(goal.get("name"), str):
        yield goal["name"]
    for stop in goal.get("stops") or ():
        if isinstance(stop, dict) and isinstance(stop.get("name"), str):
            yield stop["name"]
    closures = task.constraints.get("closures") if isinstance(task.constraints, dict) else None
    for c in closures or ():
        if isinstance(c, dict) and isinstance(c.get("label"), str):
            yield c["label"]


def task_charset(tasks: Iterable[Any]) -> frozenset[str]:
    """The ``Text`` charset for an environment holding ``tasks``: :data:`BASE_CHARSET`
    plus every character of their :func:`task_texts`.
    """
    return text_charset(text for t in tasks for text in task_texts(t))


def clean_text(text: Any, charset: frozenset[str], max_length: int | None = None) -> str:
    """``text`` as a string with every character outside ``charset`` replaced by
    :data:`REPLACEMENT`, cut to ``max_length`` characters (None: no cut).
    """
    s = str(text)
    if not charset.issuperset(s):
        s = "".join(c if c in charset else REPLACEMENT for c in s)
    return s if max_length is None else s[:max_length]


__all__ = [
    "BASE_CHARSET",
    "REPLACEMENT",
    "clean_text",
    "is_surrogate",
    "task_charset",
    "task_texts",
    "text_charset",
]
