"""A language-model judge for ``fuzzy_match``: does an agent's answer name the expected
place?

Built to 360CityArena's judge specification (appendix B.4): the judge model receives the
agent's answer and the expected answer, is told that the two need not match word for word
and that different names of the same landmark count as correct, and replies
``is_correct: True`` or ``is_correct: False``. The prompt below is written for urban_gym
(:data:`SYSTEM_PROMPT`, :data:`USER_TEMPLATE`); a user can load their own -- e.g. the
paper's exact text -- from a file (:func:`load_prompt`).

:class:`LLMJudge` has the signature of every answer judge of urban_gym
(``judge(prediction, candidate names) -> bool``: the expected name first, then its known
aliases), so it plugs into an env's ``answer_judge=`` and
:func:`urban_gym.tasks.metrics.fuzzy_match`. Verdicts are cached by (answer, expected):
in memory, and in a JSONL file when ``cache_path`` is given (one line per verdict, so a
rerun asks nothing twice).

For tests and demos, :func:`judge_responder` lets the scripted loopback server
(:class:`~urban_gym.baselines.lmm.server.ScriptedServer`) answer judge requests from
ground truth (:func:`poi_name_truth`: two names are the same landmark when they are names
of one POI of the city, generic words such as "cafe" or "restaurant" aside).
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from urban_gym.errors import InputError, JudgeError

SYSTEM_PROMPT = (
    "You grade answers in a city-navigation benchmark. You receive the answer an agent gave "
    "and the answer that was expected, which names a place such as a shop, restaurant or "
    "landmark. Decide whether the agent's answer refers to the same place. Wording, "
    "spelling, capitalisation, accents, word order and extra words do not have to match: "
    "if the two answers are different names for the same place (a translation, a short "
    "form, a brand name, a former or alternative name), the answer is correct. If the "
    "answer names a different place, names several places, or names none, it is not "
    "correct."
)
USER_TEMPLATE = (
    "Agent's answer: {answer}\n"
    "Expected answer: {expected}\n\n"
    "Reply with one line in exactly this form:\n"
    "is_correct: True\n"
    "or\n"
    "is_correct: False"
)
#: Separates the system prompt from the user template in a prompt file.
USER_MARKER = "---user---"

_VERDICT = re.compile(r"is[_ ]?correct\W{0,3}\s*(true|false|yes|no)\b", re.IGNORECASE)
_BARE = re.compile(r"^\W*(true|false)\W*$", re.IGNORECASE)


def load_prompt(path: str | Path) -> tuple[str, str]:
    """``(system prompt, user template)`` from a text file: the system prompt, optionally
    followed by a line ``---user---`` and a user template with the placeholders
    ``{answer}`` and ``{expected}`` (default template: :data:`USER_TEMPLATE`).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"judge prompt file {str(p)!r} cannot be read ({exc})") from None
    system, sep, user = text.partition(USER_MARKER)
    system, user = system.strip(), user.strip() if sep else USER_TEMPLATE
    if not system:
        raise InputError(f"judge prompt file {str(p)!r} has an empty system prompt")
    for key in ("{answer}", "{expected}"):
        if key not in user:
            raise InputError(
                f"judge prompt file {str(p)!r}: the user template lacks the placeholder {key}"
            )
    return system, user


def parse_verdict(text: str) -> bool | None:
    """The verdict of a judge reply (``is_correct: True``, ``is_correct = false``, a bare
    ``True``...), or None when there is none.
    """
    m = _VERDICT.search(text or "")
    if m:
        return m.group(1).lower() in ("true", "yes")
    m = _BARE.match(text or "")
    return m.group(1).lower() == "true" if m else None


def expected_text(candidates: Sequence[str]) -> str:
    """The expected answer shown to the judge: the name, then its aliases."""
    names = [str(c) for c in candidates if str(c).strip()]
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    return f"{names[0]} (also known as: {', '.join(names[1:])})"


class LLMJudge:
    """A chat model as an answer judge (see the module docstring).

    Args:
        client: a :class:`~urban_gym.baselines.lmm.client.ChatClient` (default: one from
            ``config`` or the environment variables).
        system_prompt, user_template: the prompt (default: urban_gym's); or
        prompt_file: a file read with :func:`load_prompt`.
        cache_path: a JSONL file of verdicts, read at start and appended to.
    """

    def __init__(
        self,
        client: Any = None,
        config: Any = None,
        system_prompt: str | None = None,
        user_template: str | None = None,
        prompt_file: str | Path | None = None,
        cache_path: str | Path | None = None,
    ) -> None:
        from urban_gym.baselines.lmm.client import ChatClient

        self.client = client if client is not None else ChatClient(config)
        if prompt_file is not None:
            system_prompt, user_template = load_prompt(prompt_file)
        self.system_prompt = system_prompt or SYSTEM_PROMPT
        self.user_template = user_template or USER_TEMPLATE
        self.cache_path = Path(cache_path) if cache_path is not None else None
        self.cache: dict[tuple[str, str], bool] = {}
        self.calls = 0
        self.unparsed = 0
        self._lock = threading.Lock()
        if self.cache_path is not None and self.cache_path.exists():
            for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.cache[(row["answer"], row["expected"])] = bool(row["is_correct"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a torn last line

    def judge(self, answer: str, expected: str) -> bool:
        """Whether ``answer`` names ``expected`` (one model call per new pair; an
        unreadable reply counts as False and in :attr:`unparsed`).
        """
        key = (str(answer), str(expected))
        with self._lock:
            if key in self.cache:
                return self.cache[key]
        from urban_gym.baselines.lmm.client import ModelError

        messages = [
            {"role": "system", "content": self.system_prompt},
            {
                "role": "user",
                "content": self.user_template.format(answer=key[0], expected=key[1]),
            },
        ]
        try:
            reply = self.client.chat(messages)
        except ModelError as exc:
            raise JudgeError(f"the judge model gave no verdict: {exc}") from exc
        verdict = parse_verdict(reply.text)
        with self._lock:
            self.calls += 1
            if verdict is None:
                self.unparsed += 1
                verdict = False
            self.cache[key] = verdict
            if self.cache_path is not None:
                from urban_gym.strict_json import append_line

                append_line(
                    self.cache_path,
                    {"answer": key[0], "expected": key[1], "is_correct": verdict},
                )
        return verdict

    def __call__(self, prediction: str, candidates: Sequence[str]) -> bool:
        """The answer-judge signature: ``prediction`` vs the expected name and aliases."""
        if not str(prediction).strip():
            return False
        return self.judge(str(prediction), expected_text(candidates))

    def close(self) -> None:
        """Close the judge's client."""
        self.client.close()

    def __getstate__(self) -> dict[str, Any]:  # pickled with an env: rebuilt client
        state = self.__dict__.copy()
        state["client_config"] = self.client.config
        state.pop("client", None)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        from urban_gym.baselines.lmm.client import ChatClient

        cfg = state.pop("client_config")
        self.__dict__.update(state)
        self.client = ChatClient(cfg)
        self._lock = threading.Lock()


def make_judge(settings: Mapping[str, Any]) -> LLMJudge:
    """An :class:`LLMJudge` from harness settings: ``base_url``, ``model``,
    ``temperature``, ``max_tokens``, ``prompt_file``, ``cache`` (a JSONL path). The
    entries a run's manifest adds to describe its judge (``prompt``, ``prompt_sha256``)
    are read past, so a manifest's ``judge`` remakes the judge it records.
    """
    from urban_gym.baselines.lmm.client import ClientConfig

    s = {k: v for k, v in settings.items() if k not in ("prompt", "prompt_sha256")}
    kind = s.pop("kind", "lmm")
    if kind != "lmm":
        raise InputError(f"judge kind {kind!r} is not 'lmm'")
    prompt_file = s.pop("prompt_file", None)
    cache = s.pop("cache", None)
    config = ClientConfig.from_env(**{k: v for k, v in s.items() if v is not None})
    return LLMJudge(config=config, prompt_file=prompt_file, cache_path=cache)


# --------------------------------------------------------------------------- ground truth
#: Words that do not change which place a name refers to (and the filler of an answer
#: given as a sentence: "It is X.").
GENERIC_WORDS = frozenset(
    """the a an of cafe caffe kahvila restaurant ravintola bar baari pub shop store kauppa
    hotel hotelli oy ab ltd inc co and ja och it is its this that answer""".split()
)
_USER_RE = re.compile(r"answer:\s*(.*?)\s*\n\s*expected answer:\s*(.*?)\s*(?:\n|$)", re.I | re.S)


def _words(name: str) -> tuple[str, ...]:
    t = unicodedata.normalize("NFKD", str(name).casefold())
    t = "".join(ch for ch in t if not unicodedata.combining(ch))
    return tuple(w for w in re.sub(r"[^\w]+", " ", t).split() if w)


def _core(name: str) -> tuple[str, ...]:
    w = _words(name)
    core = tuple(x for x in w if x not in GENERIC_WORDS)
    return core or w


def poi_name_truth(city: Any) -> Callable[[str, str], bool]:
    """Ground truth for judge requests: ``truth(answer, expected)`` is True when both are
    names of one POI of ``city`` (its name or an alias), or the answer's words are the
    expected name's -- generic words such as "cafe", "ravintola" or "Oy" and a sentence's
    filler ("It is ...") aside.
    """
    index: dict[tuple[str, ...], set[int]] = {}
    for i, p in enumerate(city.pois):
        for n in p.names:
            index.setdefault(_core(n), set()).add(i)

    def truth(answer: str, expected: str) -> bool:
        exp_names = [expected]
        m = re.match(r"(.*) \(also known as: (.*)\)$", expected)
        if m:
            exp_names = [m.group(1), *m.group(2).split(", ")]
        a = _core(answer)
        if not a:
            return False
        want: set[int] = set()
        for e in exp_names:
            if _core(e) == a:
                return True
            want |= index.get(_core(e), set())
        return bool(index.get(a, set()) & want)

    return truth


def judge_responder(truth: Callable[[str, str], bool]) -> Callable[[list], str | None]:
    """A responder of the scripted server for judge requests (a user message with the
    agent's and the expected answer): ``is_correct: True/False`` from ``truth``; None for
    other requests.
    """

    def respond(messages: list) -> str | None:
        text = _last_user_text(messages)
        m = _USER_RE.search(text)
        if m is None or "is_correct" not in text:
            return None
        return f"is_correct: {truth(m.group(1), m.group(2))}"

    return respond


def server_judge_responder(server: Any) -> Callable[[list], str | None]:
    """The scripted server's answer to judge requests: the POI-name ground truth of the
    served env's city (:func:`~urban_gym.baselines.lmm.judge.poi_name_truth`), also before
    the first episode and after the last one (an env of the served id is made for its
    city); a plain case-insensitive comparison only when the server serves no env id.
    """
    from urban_gym.baselines.lmm.judge import judge_responder, poi_name_truth

    truths: dict[int, Callable[[str, str], bool]] = {}
    served: list[Any] = []  # the city of an env made for judging, before any episode

    def served_city() -> Any:
        envs = [server.env, *(s.env for s in list(server.sessions.values())), *server._pool]
        for env in envs:
            city = getattr(getattr(env, "unwrapped", None), "city", None)
            if city is not None:
                return city
        if not served and server.env_id is not None:
            env = server.env_factory(server.env_id, server.env_kwargs)
            served.append(getattr(env.unwrapped, "city", None))
            env.close()
        return served[0] if served else None

    def truth(answer: str, expected: str) -> bool:
        city = served_city()
        if city is None:
            return answer.strip().casefold() == expected.strip().casefold()
        if id(city) not in truths:
            truths[id(city)] = poi_name_truth(city)
        return truths[id(city)](answer, expected)

    return judge_responder(truth)


def _last_user_text(messages: list) -> str:
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "user":
            c = msg.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


__all__ = [
    "SYSTEM_PROMPT",
    "USER_MARKER",
    "USER_TEMPLATE",
    "JudgeError",
    "LLMJudge",
    "expected_text",
    "judge_responder",
    "load_prompt",
    "make_judge",
    "parse_verdict",
    "poi_name_truth",
    "server_judge_responder",
]
