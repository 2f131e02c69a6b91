"""The tolerant parser: a language model's reply text -> a structured action.

Before any stage, **reasoning blocks are removed** (:func:`strip_reasoning`):
``<think>...</think>``, ``<thinking>``, ``<reasoning>``, ``<reason>``, ``<analysis>``,
``<reflection>`` and ``<scratchpad>`` blocks (any case), a closing tag with no opening one
(everything before it is reasoning, as when a chat template opened the block) and an opening
tag never closed (everything after it is reasoning, as when the reply was cut off). The
strict-JSON grounding protocol accepts JSON "after removing reasoning tags": an action
written inside a reasoning block is a draft, not the reply, so
``<think>{"action":"D"}</think>{"action":"A"}`` executes ``A``.

A reply is then read in stages; the first stage that yields a JSON value from which an action
can be taken wins:

1. **strict JSON** -- the whole reply (stripped) is a JSON value;
2. **fenced code block** -- the body of a ```` ``` ```` block (any language tag), in order;
3. **first balanced** ``{...}`` -- braces matched with double-quoted strings respected
   (a brace inside a string does not count), tried in the order the objects start; then the
   same without string tracking, and Python-style literals (single quotes, ``True``) as a
   last resort for each candidate;
4. **bare action name** -- a reply that is nothing but an action's name (``"W"``).

From the JSON value the action is taken with **synonym keys** (``action``, ``act``,
``command``, ``next_action``, ``decision`` ...; an action object nested under the action key
or named as the only key, parameters nested under ``parameters``/``args``/``input``), the
other reply fields (``thought``, ``memory``, ``answer`` ... with their synonyms) are kept, and
finally the action is put in canonical form by **value normalisation**
(:meth:`~urban_gym.envs.actions.ActionSet.normalise`).

:func:`parse_reply` never raises on any text: what it cannot read comes back as a
:class:`ParsedReply` with ``action=None`` and ``error`` saying in plain words what was
wrong. Replies longer than :data:`SCAN_WINDOW` characters are searched for balanced objects
only in their first and last :data:`SCAN_WINDOW` characters (a model does not write
megabytes of JSON; this keeps the cost of a 10 MB reply to a fraction of a second).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from urban_gym.envs.actions import (
    ACTION_KEY_SYNONYMS,
    ActionSet,
    InvalidAction,
    describe_value,
    key_text,
)

#: Reply-level keys that name the action (besides :data:`ACTION_KEY_SYNONYMS`).
REPLY_ACTION_KEYS: tuple[str, ...] = (
    *ACTION_KEY_SYNONYMS,
    "next_action",
    "chosen_action",
    "selected_action",
    "decision",
    "choice",
    "tool",
    "function",
)

#: Keys under which an action's parameters may be nested.
PARAM_CONTAINER_KEYS: tuple[str, ...] = (
    "parameters",
    "params",
    "args",
    "arguments",
    "action_input",
    "input",
    "kwargs",
)

#: Reply fields other than the action, with the other names a model may give them.
DEFAULT_FIELD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "thought": ("thought", "thoughts", "thinking", "think", "reasoning", "rationale"),
    "reason": ("reason", "reasons", "why", "justification"),
    "observation": ("observation", "observations", "obs", "what_i_see", "perception"),
    "memory": ("memory", "memo", "notes", "note", "state", "memory_update", "scratchpad"),
    "answer": ("answer", "final_answer", "response", "solution"),
}

#: Keys of the strict-JSON grounding protocol's answer objects (and their documented
#: synonyms): a reply that names an action and carries these beside it answers with that
#: object, which becomes the action's text parameter as JSON (:func:`_fold_answer_object`).
ANSWER_OBJECT_KEYS: tuple[str, ...] = (
    "answer_option_id",
    "bbox_xyxy_norm",
    "bbox",
    "bounding_box",
    "box",
    "bbox_norm",
    "answers",
    "visible_count",
    "visible_intervals_sec",
)
#: Option keys folded in with them (the protocol's synonyms of ``answer_option_id``).
ANSWER_OPTION_SYNONYMS: tuple[str, ...] = ("choice", "answer")

#: Tag names of reasoning blocks removed before parsing (:func:`strip_reasoning`).
REASONING_TAGS: tuple[str, ...] = (
    "think",
    "thinking",
    "thought",
    "reasoning",
    "reason",
    "analysis",
    "reflection",
    "scratchpad",
)

#: Characters of a long reply searched for balanced objects, at each end.
SCAN_WINDOW = 100_000
#: Balanced ``{...}`` candidates tried per pass (the first ones in the text).
MAX_CANDIDATES = 64
#: Longest candidate handed to the Python-literal fallback.
MAX_LITERAL_CHARS = 20_000
#: Longest bare reply read as an action name.
MAX_BARE_CHARS = 64


@dataclass
class ParsedReply:
    """What :func:`parse_reply` read from one reply.

    Attributes:
        action: the canonical action dict, or None when the reply could not be read.
        error: the plain-words reason when ``action`` is None (shown to the model).
        stage: where the action was found: ``"json"``, ``"fence"``, ``"braces"``,
            ``"bare"``, or ``""`` when nowhere.
        raw_action: the action dict as taken from the reply, before normalisation.
        fields: the reply's other fields by canonical name (``thought``, ``memory`` ...).
        chars: the length of the reply in characters.
        reasoning_chars: characters of reasoning blocks removed before parsing.
    """

    action: dict[str, Any] | None
    error: str = ""
    stage: str = ""
    raw_action: Any = None
    fields: dict[str, Any] = field(default_factory=dict)
    chars: int = 0
    reasoning_chars: int = 0

    @property
    def ok(self) -> bool:
        """Whether the reply yielded an action."""
        return self.action is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (for episode records)."""
        return {
            "ok": self.ok,
            "action": self.action,
            "error": self.error,
            "stage": self.stage,
            "fields": _jsonable(self.fields),
            "chars": self.chars,
            "reasoning_chars": self.reasoning_chars,
        }


def parse_reply(
    text: Any,
    action_set: ActionSet,
    field_synonyms: Mapping[str, tuple[str, ...]] | None = None,
    fill_from_fields: Mapping[str, str] | None = None,
) -> ParsedReply:
    """Read a structured action from a model's reply (see the module docstring).

    Args:
        text: the reply; anything that is not a string is read as an empty reply.
        action_set: the environment's actions (names, parameters, normalisation).
        field_synonyms: canonical field name -> accepted keys (default
            :data:`DEFAULT_FIELD_SYNONYMS`).
        fill_from_fields: parameter name -> reply field that supplies it when the action
            object lacks it (e.g. ``{"text": "answer"}``: an ``ANSWER`` action without text
            takes the reply's ``answer`` field).

    Returns:
        A :class:`ParsedReply`; never raises.
    """
    synonyms = dict(DEFAULT_FIELD_SYNONYMS if field_synonyms is None else field_synonyms)
    fill = dict(fill_from_fields or {})
    if not isinstance(text, str):
        text = ""
    reply = ParsedReply(action=None, chars=len(text))
    visible = strip_reasoning(text)
    reply.reasoning_chars = len(text) - len(visible)
    stripped = visible.strip()
    if not stripped and reply.reasoning_chars:
        reply.error = (
            "the reply held only reasoning (<think>...</think>); after it, answer with one "
            "JSON object that names an action, e.g. " + _example(action_set)
        )
        return reply
    if not stripped:
        reply.error = (
            "the reply was empty; answer with one JSON object that names an action, e.g. "
            + _example(action_set)
        )
        return reply
    first_error = ""
    found_json = False
    for stage, value in _json_values(stripped):
        found_json = True
        try:
            raw, fields = extract_action(value, action_set, synonyms)
        except InvalidAction as exc:
            first_error = first_error or str(exc)
            continue
        except Exception as exc:  # pragma: no cover - defensive: never raise from parsing
            first_error = first_error or f"the reply could not be read ({type(exc).__name__})"
            continue
        reply.stage, reply.raw_action, reply.fields = stage, raw, fields
        _fold_answer_object(raw, value, action_set)
        _fill_params(raw, fields, fill, action_set)
        try:
            reply.action = action_set.normalise(raw)
        except InvalidAction as exc:
            reply.error = str(exc)
        except Exception as exc:  # pragma: no cover - defensive
            reply.error = f"the action {_short(raw)} could not be read ({type(exc).__name__})"
        return reply
    bare = _bare_action(stripped, action_set)
    if bare is not None:
        reply.stage, reply.raw_action = "bare", bare
        try:
            reply.action = action_set.normalise(bare)
            return reply
        except InvalidAction as exc:
            reply.error = str(exc)
            return reply
    if found_json:
        reply.error = first_error or "the reply's JSON named no action"
    else:
        reply.error = (
            "no JSON object was found in the reply; answer with one JSON object that names "
            "an action, e.g. " + _example(action_set)
        )
    return reply


# --------------------------------------------------------------------------- stages

_TAGS = "|".join(REASONING_TAGS)
_OPEN = re.compile(rf"<\s*({_TAGS})(\s[^<>]*)?>", re.IGNORECASE)
_CLOSE = re.compile(rf"<\s*/\s*({_TAGS})\s*>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """``text`` without its reasoning blocks (see the module docstring).

    Blocks are removed from the outside in: an opening tag is matched to the next closing
    tag of the same name; a closing tag with no opening one removes everything before it;
    an opening tag never closed removes everything after it. Text without tags comes back
    unchanged (the same object).
    """
    if "<" not in text or (not _OPEN.search(text) and not _CLOSE.search(text)):
        return text
    out: list[str] = []
    pos = 0
    while True:
        o = _OPEN.search(text, pos)
        c = _CLOSE.search(text, pos)
        if c is not None and (o is None or c.start() < o.start()):
            out = []  # a closing tag first: everything so far was reasoning
            pos = c.end()
            continue
        if o is None:
            out.append(text[pos:])
            break
        out.append(text[pos : o.start()])
        name = o.group(1).casefold()
        end = None
        for m in _CLOSE.finditer(text, o.end()):
            if m.group(1).casefold() == name:
                end = m
                break
        if end is None:  # never closed: the rest is reasoning (a cut-off reply)
            break
        pos = end.end()
    return "".join(out)


def json_candidates(text: str) -> Iterator[tuple[str, Any]]:
    """Every JSON value stages 1-3 find in ``text`` (reasoning already removed), in order,
    as ``(stage, value)``: ``"json"`` (the whole text), ``"fence"`` (a fenced block's
    body), ``"braces"`` (a balanced ``{...}``, quoted strings respected first). The
    grounded answers' compatible reading (:mod:`urban_gym.eval.grounded`) takes the first
    that fits its schema.
    """
    return _json_values(text)


def _json_values(text: str) -> Iterator[tuple[str, Any]]:
    """Yield ``(stage, value)`` for every JSON value the stages find, in order."""
    value = _loads(text)
    if value is not _FAIL:
        yield "json", value
        return
    for body in _fenced_blocks(text):
        v = _loads(body.strip())
        if v is _FAIL:
            v = _loads_relaxed(body.strip())
        if v is not _FAIL:
            yield "fence", v
    windows = (
        [text]
        if len(text) <= 2 * SCAN_WINDOW
        else [
            text[:SCAN_WINDOW],
            text[-SCAN_WINDOW:],
        ]
    )
    seen: set[tuple[int, int, int]] = set()
    for w_no, window in enumerate(windows):
        for quote_aware in (True, False):
            for start, end in _balanced_objects(window, quote_aware):
                if (w_no, start, end) in seen:
                    continue
                seen.add((w_no, start, end))
                candidate = window[start:end]
                v = _loads(candidate)
                if v is _FAIL:
                    v = _loads_relaxed(candidate)
                if v is not _FAIL:
                    yield "braces", v


_FAIL = object()


def _loads(text: str) -> Any:
    if not text or text[0] not in '{["' and not text[0].isdigit() and text[0] not in "-tfn":
        return _FAIL
    try:
        return json.loads(text)
    except Exception:  # ValueError, RecursionError on absurd nesting, ...
        return _FAIL


_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _loads_relaxed(text: str) -> Any:
    """JSON with trailing commas, or a Python literal (single quotes, True/None)."""
    if not text or len(text) > MAX_LITERAL_CHARS or text[0] not in "{[":
        return _FAIL
    fixed = _TRAILING_COMMA.sub(r"\1", text)
    if fixed != text:
        v = _loads(fixed)
        if v is not _FAIL:
            return v
    if _max_depth(text) > 50:
        return _FAIL
    try:
        v = ast.literal_eval(text)
    except Exception:
        return _FAIL
    return v if isinstance(v, (dict, list)) else _FAIL


def _max_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch in "{[(":
            depth += 1
            best = max(best, depth)
        elif ch in "}])":
            depth -= 1
    return best


_MAX_FENCES = 200


def _fenced_blocks(text: str) -> list[str]:
    """Bodies of ```` ``` ```` blocks (the language tag on the opening line dropped)."""
    marks: list[int] = []
    pos = text.find("```")
    while pos != -1 and len(marks) < _MAX_FENCES:
        marks.append(pos)
        pos = text.find("```", pos + 3)
    bodies = []
    for a, b in zip(marks[0::2], marks[1::2]):
        body = text[a + 3 : b]
        nl = body.find("\n")
        head = body[:nl] if nl != -1 else ""
        if nl != -1 and re.fullmatch(r"\s*[A-Za-z0-9_+-]*\s*", head):
            body = body[nl + 1 :]
        elif re.match(r"(json|JSON)\s", body):
            body = body[4:]
        bodies.append(body)
    return bodies


_BRACES_QUOTES = re.compile(r'[{}"\\]')
_BRACES = re.compile(r"[{}]")


def _balanced_objects(text: str, quote_aware: bool) -> list[tuple[int, int]]:
    """``(start, end)`` spans of balanced ``{...}``, ordered by start, at most
    :data:`MAX_CANDIDATES`. With ``quote_aware``, braces inside double-quoted strings
    (opened within an object) are ignored.
    """
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    in_string = False
    escaped_at = -2
    pattern = _BRACES_QUOTES if quote_aware else _BRACES
    for m in pattern.finditer(text):
        ch, i = m.group(), m.start()
        if in_string:
            if ch == "\\":
                if escaped_at != i - 1:
                    escaped_at = i
                else:
                    escaped_at = -2
            elif ch == '"' and escaped_at != i - 1:
                in_string = False
            continue
        if ch == '"':
            if stack:
                in_string = True
        elif ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            start = stack.pop()
            spans.append((start, i + 1))
            if not stack and len(spans) >= 4 * MAX_CANDIDATES:
                break
    spans.sort()
    return spans[:MAX_CANDIDATES]


def _bare_action(text: str, action_set: ActionSet) -> str | None:
    if len(text) > MAX_BARE_CHARS:
        return None
    word = text.strip().strip("`'\".!:;,").strip()
    if not word or any(c.isspace() for c in word):
        return None
    try:
        action_set[word]
    except KeyError:
        return None
    return word


# --------------------------------------------------------------------------- extraction


def extract_action(
    value: Any,
    action_set: ActionSet,
    field_synonyms: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """The raw action object and the other reply fields from one JSON value.

    Raises :class:`InvalidAction` when the value names no action. The raw action is a dict
    with an action-name key (or a bare name) ready for :meth:`ActionSet.normalise`.
    """
    synonyms = dict(DEFAULT_FIELD_SYNONYMS if field_synonyms is None else field_synonyms)
    if isinstance(value, list):
        items = [v for v in value if isinstance(v, (dict, str))]
        if not items:
            raise InvalidAction(f"the reply {_short(value)} holds no action object")
        value = items[0]
    if isinstance(value, str):
        name = value.strip()
        _require_known(name, action_set, value)
        return {"action": name}, {}
    if not isinstance(value, Mapping):
        raise InvalidAction(
            f"the reply {_short(value)} is not a JSON object; use one of "
            + ", ".join(action_set.names)
        )
    lowered = {key_text(k): v for k, v in value.items()}
    fields = _take_fields(lowered, synonyms)
    key = _action_key(lowered, action_set)
    if key is None:
        only = _single_action_key(lowered, action_set)
        if only is None:
            raise InvalidAction(
                f"the reply {_short(value)} has no 'action' key; use one of "
                + ", ".join(action_set.names)
            )
        name, params = only
        raw = {"action": name, **_as_params(params, action_set, name)}
        return raw, fields
    inner = lowered[key]
    if isinstance(inner, list) and inner:
        inner = inner[0]
    if isinstance(inner, Mapping):
        raw = {key_text(k): v for k, v in inner.items()}
        _merge_containers(raw)
        if not any(k in raw for k in ACTION_KEY_SYNONYMS):
            only = _single_action_key(raw, action_set)
            if only is not None:
                name, params = only
                raw = {"action": name, **_as_params(params, action_set, name)}
        _inherit_params(raw, lowered, key, fields, synonyms)
        return raw, fields
    if isinstance(inner, str):
        raw = {"action": inner}
        _inherit_params(raw, lowered, key, fields, synonyms)
        return raw, fields
    if isinstance(inner, (int, float)) and not isinstance(inner, bool):
        target = _single_number_action(action_set)
        if target is not None:
            name, param = target
            return {"action": name, param: inner}, fields
    raise InvalidAction(
        f"the reply's '{key}'={_short(inner)} is not an action; use one of "
        + ", ".join(action_set.names)
    )


def _action_key(lowered: Mapping[str, Any], action_set: ActionSet) -> str | None:
    """The reply key that holds the action: the first synonym present whose value looks
    like an action (a known name, an object or a number), else the first one present.
    """
    present = [k for k in REPLY_ACTION_KEYS if k in lowered]
    for k in present:
        v = lowered[k]
        if isinstance(v, Mapping) or (isinstance(v, str) and _is_action(v.strip(), action_set)):
            return k
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return k
    return present[0] if present else None


def _take_fields(
    lowered: dict[str, Any], synonyms: Mapping[str, tuple[str, ...]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for canonical, keys in synonyms.items():
        for k in (canonical, *keys):
            k = k.casefold()
            if k in lowered and k not in REPLY_ACTION_KEYS:
                out[canonical] = lowered[k]
                break
    return out


def _merge_containers(raw: dict[str, Any]) -> None:
    for c in PARAM_CONTAINER_KEYS:
        if c in raw and isinstance(raw[c], Mapping):
            inner = raw.pop(c)
            for k, v in inner.items():
                raw.setdefault(key_text(k), v)


def _inherit_params(
    raw: dict[str, Any],
    lowered: dict[str, Any],
    key: str,
    fields: dict[str, Any],
    synonyms: Mapping[str, tuple[str, ...]],
) -> None:
    """Top-level keys that are neither the action key nor reply fields become parameters
    (a flat reply ``{"action": "W", "size": "LARGE", "thought": ...}``).
    """
    field_keys = {k.casefold() for ks in synonyms.values() for k in ks} | {
        k.casefold() for k in synonyms
    }
    top = dict(lowered)
    _merge_containers(top)
    for k, v in top.items():
        if k == key or k in field_keys:
            continue
        raw.setdefault(k, v)
    _merge_containers(raw)
    # a field name may also be a parameter name (e.g. "answer" or "state"): pass it on
    for k, v in lowered.items():
        if k in field_keys and k != key:
            raw.setdefault(k, v)


def _single_action_key(lowered: Mapping[str, Any], action_set: ActionSet) -> tuple[str, Any] | None:
    names = [k for k in lowered if _is_action(k, action_set)]
    if len(names) == 1:
        return names[0], lowered[names[0]]
    return None


def _as_params(params: Any, action_set: ActionSet, name: str) -> dict[str, Any]:
    if isinstance(params, Mapping):
        out = {key_text(k): v for k, v in params.items()}
        _merge_containers(out)
        return out
    spec = action_set[name]
    required = [p for p in spec.params if p.required] or list(spec.params)
    if params is not None and not isinstance(params, (list, bool)) and required:
        return {required[0].name: params}
    return {}


def _is_action(name: str, action_set: ActionSet) -> bool:
    try:
        action_set[name]
    except (KeyError, AttributeError):
        return False
    return True


def _require_known(name: str, action_set: ActionSet, value: Any) -> None:
    if not _is_action(name, action_set):
        raise InvalidAction(
            f"unknown action {_short(value)}; use one of " + ", ".join(action_set.names)
        )


def _single_number_action(action_set: ActionSet) -> tuple[str, str] | None:
    """The only action whose only parameter is a number (e.g. choosing an option index)."""
    hits = [
        (s.name, s.params[0].name)
        for s in action_set.specs
        if len(s.params) == 1 and s.params[0].kind in ("int", "float")
    ]
    return hits[0] if len(hits) == 1 else None


def _fill_params(
    raw: Any, fields: Mapping[str, Any], fill: Mapping[str, str], action_set: ActionSet
) -> None:
    if not isinstance(raw, dict) or not fill:
        return
    name = next((raw[k] for k in ACTION_KEY_SYNONYMS if k in raw), None)
    if not isinstance(name, str) or not _is_action(name.strip(), action_set):
        return
    spec = action_set[name.strip()]
    for p in spec.params:
        src = fill.get(p.name) or (fill.get("*") if p.kind == "str" else None)
        present = any(k.casefold() in raw for k in (p.name, *p.key_synonyms))
        if src and not present and fields.get(src) not in (None, ""):
            raw[p.name] = fields[src]


def _fold_answer_object(raw: Any, value: Any, action_set: ActionSet) -> None:
    """A grounded answer written beside the action (``{"action": "ANSWER",
    "answer_option_id": "A", "bbox_xyxy_norm": [...]}``) becomes the action's only text
    parameter, as the JSON object of those keys (with ``choice`` / ``answer`` when given
    as the option), unless that parameter already holds an object or a JSON text.
    """
    if not isinstance(raw, dict) or not isinstance(value, Mapping):
        return
    top = {key_text(k): v for k, v in value.items()}
    if not any(k in top for k in ANSWER_OBJECT_KEYS):
        return
    name = next((raw[k] for k in ACTION_KEY_SYNONYMS if k in raw), None)
    if not isinstance(name, str) or not _is_action(name.strip(), action_set):
        return
    texts = [p for p in action_set[name.strip()].params if p.kind == "str"]
    if len(texts) != 1:
        return
    p = texts[0]
    keys = [p.name, *p.key_synonyms]
    given = next((raw[k] for k in keys if raw.get(k) is not None), None)
    if isinstance(given, Mapping) or (
        isinstance(given, str) and given.lstrip()[:1] in "{[" and given.strip()
    ):
        return
    obj = {k: top[k] for k in (*ANSWER_OPTION_SYNONYMS, *ANSWER_OBJECT_KEYS) if k in top}
    for k in keys:
        raw.pop(k, None)
    raw[p.name] = json.dumps(obj, ensure_ascii=False)


def _example(action_set: ActionSet) -> str:
    ex = action_set.examples()
    return json.dumps(ex[0], ensure_ascii=False) if ex else '{"action": "..."}'


def _short(value: Any, limit: int = 80) -> str:
    return describe_value(value, limit)


def _jsonable(value: Any) -> Any:
    """``value`` if ``json.dumps`` can write it, else its shortened ``repr``; never raises
    (a value nested too deep for ``json.dumps`` comes back as its ``repr``, too).
    """
    try:
        json.dumps(value)
        return value
    except Exception:  # TypeError, ValueError, RecursionError
        return describe_value(value, 200)
